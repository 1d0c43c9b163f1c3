# Rewrites citations of the out-of-tree SPEC (../shared/SPEC.md) to Docs/Reference.md, which holds
# its §1–3 with the same numbers. Run at merge, from the repository root, with GNU sed:
#   grep -rlZ 'SPEC' Sources Tests README.md Data Benchmarks | xargs -0 sed -i -f Docs/cite.sed
# Patterns found (51 lines at the time of writing): "SPEC §1", "SPEC §2", "SPEC §3", "SPEC §1–2", "SPEC §1–3",
# each also as "…'s" and inside parentheses, plus "SPEC §7" twice and "SPEC numbers" once.

# §7 (the Fashion-MNIST files on disk) is not part of the reference; Data/README.md says where they are.
s|dataset-fashion-mnist` (SPEC §7)|dataset-fashion-mnist` (see Data/README.md)|g
s|; see SPEC §7)|)|g

# A citation of §1 that means §3's run (x 0.01, target 0.1, w = b = 0.5).
s|the single neuron of SPEC §1: x 0.01|the single neuron of Docs/Reference.md §3: x 0.01|g

# "exact SPEC numbers" (VectorTanh.swift).
s|(exact SPEC numbers)|(Docs/Reference.md's exact numbers)|g

# Everything else: SPEC §1, §2, §3, §1–2, §1–3, with or without 's.
s|\bSPEC §|Docs/Reference.md §|g
