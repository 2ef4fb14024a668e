"""Wrong fixes that pass the full tests: test data for pass@1+ (tests/test_plus_catch.py).

Each is a plausible repair of one task that passes the task's whole test and is still wrong on an
input inside the docstring's domain: the witness, on which it and the canonical solution differ.
The kinds of mistake differ: boundaries, empty input, negatives and zero, duplicates, order,
whitespace, separators, case, character sets, a wrong statistic, off-by-one loops, tables of
answers that stop too early, and answers fitted to the test's asserts.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class WrongFix(NamedTuple):
    kind: str
    witness: tuple[Any, ...]  # an input in the docstring's domain where the fix is wrong
    code: str


WRONG_FIXES: dict[str, WrongFix] = {
    "Python/0": WrongFix(
        "boundary: <= for <",
        ([1.0, 2.0, 2.0], 0.0),
        """
def has_close_elements(numbers, threshold):
    s = sorted(numbers)
    return any(b - a <= threshold for a, b in zip(s, s[1:]))
""",
    ),
    "Python/4": WrongFix(
        "wrong statistic: deviation from the median",
        ([1.0, 2.0, 6.0],),
        """
def mean_absolute_deviation(numbers):
    centre = sorted(numbers)[len(numbers) // 2]
    return sum(abs(x - centre) for x in numbers) / len(numbers)
""",
    ),
    "Python/9": WrongFix(
        "negatives: running maximum starts at 0",
        ([-3, -1, -2],),
        """
def rolling_max(numbers):
    out, best = [], 0
    for n in numbers:
        best = max(best, n)
        out.append(best)
    return out
""",
    ),
    "Python/13": WrongFix(
        "fitted to the asserts",
        (12, 18),
        """
def greatest_common_divisor(a, b):
    if a == 49:
        return 7
    if a == 144:
        return 12
    if a == 10:
        return 5
    return 1
""",
    ),
    "Python/26": WrongFix(
        "order: the kept numbers sorted",
        ([3, 1],),
        """
def remove_duplicates(numbers):
    return sorted(n for n in set(numbers) if numbers.count(n) == 1)
""",
    ),
    "Python/29": WrongFix(
        "substring for prefix",
        (["axxx"], "xxx"),
        """
def filter_by_prefix(strings, prefix):
    return [s for s in strings if prefix in s]
""",
    ),
    "Python/31": WrongFix(
        "zero and negatives: only 1 special-cased",
        (0,),
        """
def is_prime(n):
    if n == 1:
        return False
    for k in range(2, n):
        if n % k == 0:
            return False
    return True
""",
    ),
    "Python/34": WrongFix(
        "negatives: sorted by magnitude",
        ([-5, 3],),
        """
def unique(l):
    return sorted(set(l), key=abs)
""",
    ),
    "Python/35": WrongFix(
        "negatives: maximum starts at 0",
        ([-3, -1, -2],),
        """
def max_element(l):
    m = 0
    for e in l:
        if e > m:
            m = e
    return m
""",
    ),
    "Python/43": WrongFix(
        "duplicates: two zeros",
        ([0, 0, 1],),
        """
def pairs_sum_to_zero(l):
    return any(-x in l for x in l if x != 0)
""",
    ),
    "Python/45": WrongFix(
        "fitted to the asserts",
        (4, 6),
        """
def triangle_area(a, h):
    if a == 5 and h == 3:
        return 7.5
    if a == 10:
        return 40.0
    return a * h / 2 if a < 3 else a + h
""",
    ),
    "Python/51": WrongFix(
        "character set: lowercase o and u missing",
        ("you",),
        """
def remove_vowels(text):
    return "".join(c for c in text if c not in "aeiAEIOU")
""",
    ),
    "Python/52": WrongFix(
        "empty input: max of nothing",
        ([], 5),
        """
def below_threshold(l, t):
    return max(l) < t
""",
    ),
    "Python/55": WrongFix(
        "fitted to the asserts",
        (7,),
        """
def fib(n):
    if n == 10:
        return 55
    if n == 8:
        return 21
    if n == 11:
        return 89
    if n == 12:
        return 144
    return n
""",
    ),
    "Python/57": WrongFix(
        "ties: the direction read from the first two elements",
        ([1, 1, 0],),
        """
def monotonic(l):
    if len(l) < 2 or l[0] <= l[1]:
        return l == sorted(l)
    return l == sorted(l, reverse=True)
""",
    ),
    "Python/58": WrongFix(
        "duplicates: common elements not made unique",
        ([1, 1, 2], [1]),
        """
def common(l1, l2):
    return sorted(e for e in l1 if e in l2)
""",
    ),
    "Python/76": WrongFix(
        "negatives: a negative base never has powers",
        (49, -7),
        """
def is_simple_power(x, n):
    if n <= 1:
        return x == 1
    power = 1
    while power < x:
        power *= n
    return power == x
""",
    ),
    "Python/81": WrongFix(
        "boundary: 3.7 is an A",
        ([3.7],),
        """
def numerical_letter_grade(grades):
    table = [(3.7, "A"), (3.3, "A-"), (3.0, "B+"), (2.7, "B"), (2.3, "B-"), (2.0, "C+"), (1.7, "C"), (1.3, "C-"), \
(1.0, "D+"), (0.7, "D"), (0.0, "D-")]
    out = []
    for gpa in grades:
        if gpa == 4.0:
            out.append("A+")
            continue
        for limit, letter in table:
            if (gpa >= limit if letter == "A" else gpa > limit):
                out.append(letter)
                break
        else:
            out.append("E")
    return out
""",
    ),
    "Python/82": WrongFix(
        "a table of primes that stops early",
        ("a" * 17,),
        """
def prime_length(string):
    return len(string) in (2, 3, 5, 7, 11, 13)
""",
    ),
    "Python/83": WrongFix(
        "fitted to the asserts, as the committed agent run's answer was",
        (6,),
        """
def starts_one_ends(n):
    if n == 1:
        return 1
    elif n == 2:
        return 18
    elif n == 3:
        return 180
    elif n == 4:
        return 1800
    elif n == 5:
        return 18000
    return 2 * 9 * 10 ** (n - 3)
""",
    ),
    "Python/86": WrongFix(
        "whitespace: a newline splits words too",
        ("hello\nworld",),
        """
def anti_shuffle(s):
    return " ".join("".join(sorted(w)) for w in s.split())
""",
    ),
    "Python/91": WrongFix(
        "separators: only '.' ends a sentence",
        ("Is it? I am.",),
        """
def is_bored(S):
    return sum(1 for s in S.split(".") if s.strip().startswith("I "))
""",
    ),
    "Python/101": WrongFix(
        "separators: a comma without a space joins words",
        ("One,two",),
        """
def words_string(s):
    return s.replace(",", "").split()
""",
    ),
    "Python/124": WrongFix(
        "boundary: month 00 accepted",
        ("00-10-2000",),
        """
def valid_date(date):
    try:
        month, day, year = date.strip().split("-")
        month, day, year = int(month), int(day), int(year)
    except ValueError:
        return False
    if month > 12:
        return False
    if month in (1, 3, 5, 7, 8, 10, 12) and not 1 <= day <= 31:
        return False
    if month in (4, 6, 9, 11) and not 1 <= day <= 30:
        return False
    if month == 2 and not 1 <= day <= 29:
        return False
    return True
""",
    ),
    "Python/125": WrongFix(
        "whitespace: split on one space",
        ("Hello  world",),
        """
def split_words(txt):
    if " " in txt:
        return txt.split(" ")
    if "," in txt:
        return txt.split(",")
    return len([c for c in txt if c.islower() and ord(c) % 2 == 0])
""",
    ),
    "Python/140": WrongFix(
        "whitespace: exactly three spaces",
        ("a    b",),
        """
def fix_spaces(text):
    return text.replace("   ", "-").replace(" ", "_")
""",
    ),
    "Python/143": WrongFix(
        "a table of primes that stops early",
        ("go extraordinary",),
        """
def words_in_sentence(sentence):
    return " ".join(w for w in sentence.split() if len(w) in (2, 3, 5, 7))
""",
    ),
    "Python/141": WrongFix(
        "case: the extension compared without case",
        ("example.TXT",),
        """
def file_name_check(file_name):
    parts = file_name.split(".")
    if len(parts) != 2 or parts[1].lower() not in ("txt", "exe", "dll"):
        return "No"
    name = parts[0]
    if not name or not name[0].isalpha() or sum(c.isdigit() for c in name) > 3:
        return "No"
    return "Yes"
""",
    ),
    "Python/150": WrongFix(
        "off-by-one: trial division stops before n // 2",
        (4, 1, 2),
        """
def x_or_y(n, x, y):
    if n < 2:
        return y
    for k in range(2, n // 2):
        if n % k == 0:
            return y
    return x
""",
    ),
}
