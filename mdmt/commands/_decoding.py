"""The decoding options of ``mdmt exact`` and ``mdmt adaptive exact|sample``, and their exact laws on explicit laws.

``--sizes S1,S2,...``      explicit step sizes (how many positions each step reveals; they sum to L)
``--remainder first|last`` where balanced sizes from N put the L mod N larger steps (default first: LLaDA's
                           ``get_num_transfer_tokens``, reused by ParallelBench's code; ``last``: the k tokens per
                           step of ParallelBench's Section 4 analysis, the last step taking what is left)
``--decode sample|greedy`` tokens drawn from the marginals (temperature 1) or the argmax, ties uniformly at random
"""

from __future__ import annotations

from ._common import int_list


def add_decoding(p, sizes: bool = True) -> None:
    from mdmt.defaults import DECODES, REMAINDERS

    if sizes:
        p.add_argument("--sizes", metavar="S1,S2,...",
                       help="explicit step sizes, comma-separated, summing to L (fixed-size rules: uniform and the "
                            "top-k rules); the number of steps is their count")
        p.add_argument("--remainder", choices=REMAINDERS, default="first",
                       help="balanced sizes from N: the L mod N larger steps come first (LLaDA's and ParallelBench's "
                            "code) or last (k tokens per step, the last step taking the rest) (default first)")
    p.add_argument("--decode", choices=DECODES, default="sample",
                   help="tokens: sample from the marginals (temperature 1) or greedy (argmax, ties uniformly at "
                        "random; explicit laws and the samplers) (default sample)")


def sizes_of(args) -> list[int] | None:
    """--sizes as integers (None when not given); -N, if given, must be their count."""
    text = getattr(args, "sizes", None)
    if text is None:
        return None
    s = int_list("--sizes", text)
    if args.steps is not None and args.steps != len(s):
        raise ValueError(f"--steps {args.steps} disagrees with --sizes {text} ({len(s)} steps)")
    if sum(s) != args.length:
        raise ValueError(f"--sizes {text} sum to {sum(s)}, not --length {args.length}")
    return s


def check_explicit_length(lang, args) -> None:
    """-L must be the length of an explicit law's sequences."""
    if args.length != lang.length:
        raise ValueError(f"--length {args.length}: the explicit law {args.language} holds sequences of length "
                         f"{lang.length} only")


def fraction_text(f) -> str | None:
    return None if f is None else f"{f.numerator}/{f.denominator}" if f.denominator != 1 else str(f.numerator)


def explicit_exact(lang, args, policy) -> dict:
    """The exact law of ``policy`` on the explicit law's support: KL, SER, accuracy, with exact rationals when
    computed (``ser_exact: "5/8"``)."""
    from mdmt.constructions.reverse.support_exact import support_law

    check_explicit_length(lang, args)
    law = support_law(lang, policy, decode=args.decode)
    steps = args.steps if args.steps is not None else len(policy.plans(lang.length)[0][1].mode)
    out = {"length": args.length, "steps": steps, "policy": policy.spec, "decode": args.decode,
           "language_kind": "explicit", "n_sequences": lang.n_sequences}
    sizes = getattr(policy, "sizes", None)
    if sizes is None and hasattr(policy, "sizes_for"):
        sizes = policy.sizes_for(lang.length)
    if sizes is not None:
        out["sizes"] = [int(s) for s in sizes]
    out.update(kl_nats=law.kl_nats, kl_bits_per_token=law.kl_bits_per_token, ser=law.ser, accuracy=law.accuracy,
               ser_exact=fraction_text(law.ser_exact), accuracy_exact=fraction_text(law.accuracy_exact),
               expected_nfe=policy.expected_nfe(lang.length) if not policy.adaptive else None,
               orbits=law.n_orbits, symmetries=len(law.generators))
    if law.p_exact is None:
        out["note"] = ("exact rationals not computed: the process involves real numbers (i.i.d. rates, entropies, "
                       "random sizes), the weights are floats, or the rational chain is too large; float64 values")
    return out
