#!/bin/sh
# A coreutils workload for `flatux run --syscall-entry=trap --site-survey=FILE
# -- /bin/sh bench/coreutils_workload.sh SCRATCH` (docs/PERFORMANCE.md, "Which
# sites each shape covers"). SCRATCH: an empty folder it may fill.
set -e
D=$1
for i in 1 2 3; do
  ls -la /usr/bin > $D/ls.txt
  cat /etc/passwd /etc/group | sort | uniq -c | sort -n | tail -3 > /dev/null
  wc -l $D/ls.txt > /dev/null
  mkdir -p $D/t$i
  cp -r /usr/include/linux $D/t$i/
  du -s $D/t$i > /dev/null
  md5sum $D/t$i/linux/*.h | sha256sum > /dev/null
  ls -R $D/t$i | head -50 | tr a-z A-Z | cut -c1-10 > /dev/null
  stat $D/ls.txt > /dev/null
  seq 1 20000 | tee $D/seq.txt | tail -1 > /dev/null
  od -c $D/seq.txt | head > /dev/null
  touch $D/t$i/x; mv $D/t$i/x $D/t$i/y; rm -rf $D/t$i
  date > /dev/null
done
