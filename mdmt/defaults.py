"""Names and defaults that the library and the command line share, defined once.

This module imports nothing, so that building the ``mdmt`` parser (``mdmt --help``,
``mdmt COMMAND --help``) needs neither numpy's heavier friends nor sympy or scipy: the modules
that compute with these names (:mod:`mdmt.bounds.studies.curves`, :mod:`mdmt.bounds.studies.atlas`,
:mod:`mdmt.bounds.studies.adaptive`, :mod:`mdmt.constructions.reverse.policies`) import them from here.
"""

#: The schedules of a TER bound curve (``mdmt curve ter --schedule``); ``warmstart`` first reveals the
#: fraction eps of Theorem 4.2.
TER_SCHEDULES = ("warmstart", "linear", "cosine")

#: The grammar of a reverse process (policy) SPEC, as quoted in help texts and errors.
POLICY_FORMS = ("iid[:SCHEDULE], uniform, random:tc|dtc|uniform, confidence, margin, entropy, threshold:TAU, "
                "entropy-sum:GAMMA, stride, blocks, optimal, bisect[:W], remdm:cap|rescale|loop|conf[:ETA], "
                "verified:B|B1,B2,...|adaptive[:B0]")

#: Where balanced step sizes from N put the L mod N larger steps: on the first steps (LLaDA's
#: ``get_num_transfer_tokens``, reused by ParallelBench's code) or the last (docs/tasks.md).
REMAINDERS = ("first", "last")

#: How a step's tokens are chosen: sampled from the marginals (temperature 1) or greedy (argmax, ties uniformly).
DECODES = ("sample", "greedy")

#: The reverse processes of ``mdmt atlas`` by default: every family the atlas knows.
ATLAS_PROCESSES = ("iid,uniform,random:tc,random:dtc,confidence,margin,entropy,threshold:0.9,entropy-sum:1,"
                   "stride,blocks")

#: The policies of the SER study (``mdmt adaptive ser``) by default.
SER_POLICIES = ("iid,uniform,confidence,margin,entropy,threshold:0.5,threshold:0.3,entropy-sum:0.5,entropy-sum:1,"
                "stride,blocks")

#: The policies of the TER study (``mdmt adaptive ter``) by default, before the swept threshold and entropy-sum.
TER_POLICIES = "iid,uniform,random:tc,confidence,margin,entropy,stride,blocks"

TER_TARGET = 0.05  # nats/token: the TER gap a sampler must reach in Figure 1's third row (mdmt figure1)
SER_TARGET = 0.1  # the SER a sampler must reach there


def target_metric(role: str) -> tuple[str, float]:
    """(row key, target) of a Figure 1 language's role: the TER gap for "ter", the SER for "ser"."""
    return ("ter_gap", TER_TARGET) if role == "ter" else ("ser", SER_TARGET)
