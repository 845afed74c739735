"""The attack scripts' common ending: each failure said, then the verdict."""


def finish(failures):
    """Prints the failures and ok/FAILED; the script's exit status."""
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0
