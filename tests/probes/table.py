import sys, re, glob, collections
d = sys.argv[1]
rows = []
reasons = collections.Counter()
for f in sorted(glob.glob(f"{d}/p*.out")):
    for line in open(f):
        m = re.match(r"RESULT (\S+) (\S+) (.*)", line)
        if m: rows.append((m.group(1), m.group(2), m.group(3)))
        m = re.match(r"  REASON (\S+) (\S+): (.*)", line)
        if m and not m.group(3).startswith("SKIP Module._call_impl"):
            r = re.sub(r" \(in .*", "", m.group(3))
            r = re.sub(r" @\S+$", "", r)
            reasons[r[:110]] += 1
for r in rows: print("|", " | ".join(r), "|")
print()
for r, c in reasons.most_common(): print(c, r)
