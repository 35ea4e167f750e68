"""`jax._src.util`'s helpers that JAX's guides use (`safe_map`,
`safe_zip`: `map` and `zip` that insist on equal lengths)."""


def safe_map(f, *args):
    args = list(map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {list(map(len, args))}")
    return list(map(f, *args))


def safe_zip(*args):
    args = list(map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {list(map(len, args))}")
    return list(zip(*args))
