"""The table rows profile_infer.py and profile_steps.py share: the ATen ops
no class took, the `most` costliest by name, the rest as one row."""
import collections


def print_other_rows(pe, pc, prefix, most):
    """pe, pc: shares per class (eager, compiled); the unclassed ones are the keys starting with `prefix`."""
    others = collections.Counter({k: max(pe.get(k, 0), pc.get(k, 0)) for k in set(pe) | set(pc)
                                  if k.startswith(prefix)})
    named = [k for k, _ in others.most_common(most)]
    for k in named:
        print(f"| {k[len(prefix):]} | {pe.get(k, 0.0):.1f} | {pc.get(k, 0.0):.1f} |")
    rest_e = sum(v for k, v in pe.items() if k.startswith(prefix) and k not in named)
    rest_c = sum(v for k, v in pc.items() if k.startswith(prefix) and k not in named)
    print(f"| other ATen ops | {rest_e:.1f} | {rest_c:.1f} |")
