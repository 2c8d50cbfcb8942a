"""Programs the validator benchmark times (`lackjail bench`); both are valid with no tools."""

TRIVIAL = "x = len([1, 2, 3])\nx"

TWENTY_LINES = """\
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
sizes = {w: len(w) for w in words if w}
longest = max(words, key=lambda w: len(w))
total = 0
lines = []
for i, w in enumerate(sorted(words, key=lambda w: -sizes[w])):
    if sizes[w] > 4:
        total += sizes[w] * 2
    elif w in ("beta", "zeta"):
        total -= 1
    else:
        total = total + i
    lines.append(f"{i:>2} {w!r}: {sizes[w]} chars")
evens = [n // 2 for n in range(20) if n % 2 == 0]
pairs = list(zip(words, evens))
summary = {"total": total, "count": len(lines), "any_long": any([s > 5 for s in sizes.values()])}
flags = set([w[0] for w in words])
ratio = round(total / max(len(words), 1), 2)
print(f"{len(pairs)} pairs, ratio {ratio}, longest {longest!r}")
[summary, ratio, lines[-1] if lines else None, sum(evens)]
"""
