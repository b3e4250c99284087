#!/bin/bash
# usage: runall.sh BUILD_DIR OUTDIR
B=$1; O=$2; mkdir -p $O
for p in p*.py; do
  n=${p%.py}
  timeout 600 $B/tracejit $p > $O/$n.out 2>&1
  echo "$n rc=$?" >> $O/rc.txt
done
