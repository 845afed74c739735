#!/bin/sh
# The ext4 fuzzer's seed corpus: small valid images of one tree holding
# every kind of node (files with extents or indirect blocks, a sparse file,
# directories, one big enough for an htree index, fast and slow symlinks, a
# hard link, a FIFO), as ext4 with and without metadata checksums, with
# inline data, with an htree directory, ext2, ext3 with a journal, and one
# made by `flatux mkimage`. Small on purpose: every byte is a mutation
# target, and metadata is what the fuzzer should be changing.
# usage: make_ext4_seeds.sh OUT_DIR FLATUX
set -eu
out=$1 flatux=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ext4-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree/d/e" "$tree/many"
echo hello > "$tree/f"
i=0
while [ $i -lt 2500 ]; do echo "line $i"; i=$((i + 1)); done > "$tree/mid"  # > 12 blocks of 1 KiB
: > "$tree/empty"
printf end > "$tree/sparse"
truncate -s 300000 "$tree/sparse"
ln -s f "$tree/fast"
ln -s "$(printf '%0120d' 0 | tr 0 y)" "$tree/slow"
ln "$tree/f" "$tree/d/hard"
mkfifo "$tree/d/p"
echo deep > "$tree/d/e/deep"
i=0
while [ $i -lt 90 ]; do echo $i > "$tree/many/entry-with-a-longish-name-$i"; i=$((i + 1)); done

mkdir -p "$out"
rm -f "$out"/*.img
mk() {  # NAME SIZE MKE2FS-OPTION...
  name=$1 size=$2
  shift 2
  mke2fs -q -F -b 1024 -N 128 -E nodiscard "$@" -d "$tree" "$out/$name.img" "$size" > /dev/null
}
mk ext4-csum 256K -t ext4 -O ^has_journal
mk ext4-nocsum 256K -t ext4 -O ^has_journal,^metadata_csum
mk ext4-inline 256K -t ext4 -O ^has_journal,inline_data
mk ext4-htree 256K -t ext4 -O ^has_journal,^metadata_csum
e2fsck -fyD "$out/ext4-htree.img" > /dev/null 2>&1 || [ $? -le 1 ]  # 1: directories were indexed
mk ext2 256K -t ext2
mk ext3-journal 2M -t ext3
"$flatux" mkimage "$tree" -o "$out/mkimage.img" --size 512K > /dev/null
for img in "$out"/*.img; do
  e2fsck -fn "$img" > /dev/null 2>&1 || { echo "seed $img is not clean" >&2; exit 1; }
done
