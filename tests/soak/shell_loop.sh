# A busybox shell loop for soak.py: every round runs an external program,
# a pipeline and a subshell (vfork, exec, pipes, wait). $1 is the number
# of rounds; checkpoints speak soak.c's protocol. No command substitution:
# the no-MMU busybox shell itself grows by ~150 bytes with each one, natively
# as well.
checkpoint() {
  slab=-1 kstack=-1
  while read -r key value unit; do
    case $key in
      Slab:) slab=$value ;;
      KernelStack:) kstack=$value ;;
    esac
  done < /proc/meminfo
  echo "checkpoint $1 $2 slab_kb=$slab kstack_kb=$kstack"
  read -r reply
}
n=$1
warm=$((n / 100))
[ "$warm" -lt 10 ] && warm=10
i=0
while [ "$i" -lt "$n" ]; do
  i=$((i + 1))
  /bin/true
  echo "$i" | cat > /dev/null
  (exit 3) || :
  [ "$i" = "$warm" ] && checkpoint warm "$i"
done
checkpoint end "$i"
