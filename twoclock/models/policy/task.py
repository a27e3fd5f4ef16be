"""The verifiable task: 2-digit addition "ab+cd=" answered by up to 3 digits and an end token.

Tokens: digits 0-9, PLUS, EQ, and two end tokens END_A / END_B that the verifier accepts alike
(the reward-indifferent choice the policy may drift in). A prompt is 6 tokens (operands zero
padded: "07+35="); a response is ANSWER_LEN = 4 tokens, read up to its first end token.
Correct: the sum's decimal digits (no leading zero) then END_A or END_B.

Pools (disjoint): the out-of-distribution pool is every problem whose operands' ones digits are
both >= `OOD_DIGIT` (a carry with large digits, never seen in training); the rest is shuffled
once (by `seed`) into a held-out pool of n_test and a train pool of n_train problems.
"""
from typing import NamedTuple

import numpy as np

PLUS, EQ, END_A, END_B = 10, 11, 12, 13
VOCAB = 14
PROMPT_LEN, ANSWER_LEN = 6, 4
SEQ_LEN = PROMPT_LEN + ANSWER_LEN
OOD_DIGIT = 7


class Pool(NamedTuple):
    """Problems as arrays, leading axis N."""
    prompt: np.ndarray   # int32 [N, PROMPT_LEN]
    answer: np.ndarray   # int32 [N, ANSWER_LEN]: the END_A variant, padded with END_A
    n_digits: np.ndarray  # int32 [N]: the end token sits at answer position n_digits
    total: np.ndarray    # int32 [N]: a + b


def digits(n: int) -> list:
    return [int(c) for c in str(int(n))]


def encode(a_N, b_N, end: int = END_A) -> Pool:
    """The pool of problems a + b (arrays of ints in [0, 99])."""
    a_N, b_N = np.asarray(a_N, np.int64), np.asarray(b_N, np.int64)
    N = a_N.shape[0]
    prompt = np.stack([a_N // 10, a_N % 10, np.full(N, PLUS), b_N // 10, b_N % 10,
                       np.full(N, EQ)], axis=1).astype(np.int32)
    answer = np.full((N, ANSWER_LEN), end, np.int32)
    nd = np.zeros(N, np.int32)
    for i, s in enumerate(a_N + b_N):
        d = digits(s)
        answer[i, :len(d)] = d
        nd[i] = len(d)
    return Pool(prompt, answer, nd, (a_N + b_N).astype(np.int32))


def make_pools(n_train: int, n_test: int, seed: int) -> tuple:
    """(train, held-out, out-of-distribution) pools; ValueError if n_train + n_test is too many."""
    a, b = np.divmod(np.arange(10_000), 100)
    ood = (a % 10 >= OOD_DIGIT) & (b % 10 >= OOD_DIGIT)
    rest = np.flatnonzero(~ood)
    if n_train + n_test > rest.size:
        raise ValueError(f"n_train + n_test must be <= {rest.size} (got {n_train + n_test})")
    perm = np.random.default_rng(seed).permutation(rest)
    test_i, train_i = perm[:n_test], perm[n_test:n_test + n_train]
    ood_i = np.flatnonzero(ood)
    return tuple(encode(a[i], b[i]) for i in (train_i, test_i, ood_i))


def answer_mask(n_digits_N):
    """bool [N, ANSWER_LEN]: the answer positions that count (digits and the end token)."""
    return np.arange(ANSWER_LEN)[None] <= np.asarray(n_digits_N)[:, None]


def verify(resp_NxA, answer_NxA, n_digits_N, xp=np):
    """bool [N]: exact match, the sum's digits, then END_A or END_B (what follows the
    first end token is ignored). xp: numpy or jax.numpy."""
    pos = xp.arange(ANSWER_LEN)[None]
    nd = n_digits_N[:, None]
    is_end = (resp_NxA == END_A) | (resp_NxA == END_B)
    digits_ok = xp.all((pos >= nd) | (resp_NxA == answer_NxA), axis=1)
    end_ok = xp.any((pos == nd) & is_end, axis=1)
    return digits_ok & end_ok


def response_length(resp_NxA, xp=np):
    """Tokens up to and including the first end token (ANSWER_LEN if there is none)."""
    is_end = (resp_NxA == END_A) | (resp_NxA == END_B)
    first = xp.argmax(is_end, axis=1)
    return xp.where(xp.any(is_end, axis=1), first + 1, ANSWER_LEN)


def response_mask(resp_NxA, xp=np):
    """bool [N, ANSWER_LEN]: the tokens a response consists of (up to its first end token)."""
    return xp.arange(ANSWER_LEN)[None] < response_length(resp_NxA, xp)[:, None]


def noisy_labels(pool: Pool, noise: float, end_b_frac: float, rng) -> tuple:
    """Warm-up targets (tokens [N, ANSWER_LEN], n_digits [N]): the correct answer, or with
    probability `noise` the answer of a wrong sum drawn uniformly from [0, 198]; ending in END_B with probability
    end_b_frac (else END_A)."""
    N = pool.total.shape[0]
    wrong = rng.integers(0, 198, N)
    wrong = np.where(wrong >= pool.total, wrong + 1, wrong)  # uniform over the other sums
    total = np.where(rng.random(N) < noise, wrong, pool.total)
    end = np.where(rng.random(N) < end_b_frac, END_B, END_A)
    out, nd = np.empty((N, ANSWER_LEN), np.int32), np.empty(N, np.int32)
    for i in range(N):
        d = digits(total[i])
        out[i], nd[i] = d + [end[i]] * (ANSWER_LEN - len(d)), len(d)
    return out, nd
