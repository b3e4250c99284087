import sys

print("module-main", __name__, sys.argv[1:])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
