"""Fails when a kernel indexes TsrKernelCall's args or outputs without a check.

Every such line in plugins/ and sdk/example*/ must carry a "checked:" comment
naming the bound it relies on (hot paths read args directly after testing
num_args); everything else goes through tessera/sdk/kernel_args.hpp (C++) or
tessera/sdk/kernel_args.h (C).

    python3 unchecked_args_lint.py <repo>
"""
import pathlib
import re
import sys

INDEXING = re.compile(r"(\.|->)(args|outputs)\[|(?<![A-Za-z_])args\[[0-9]")


def code_part(line):
    """The line without its // comment (string literals holding // are rare here)."""
    return line.split("//", 1)[0]


def main(root):
    root = pathlib.Path(root)
    bad = []
    files = [p for d in ("plugins", "sdk") for p in (root / d).rglob("*")
             if p.suffix in (".c", ".h", ".cpp", ".hpp", ".cu") and "include" not in p.parts]
    for path in sorted(files):
        in_block = False
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            stripped = line.strip()
            if in_block:
                in_block = "*/" not in stripped
                continue
            if stripped.startswith("/*"):
                in_block = "*/" not in stripped
                continue
            if INDEXING.search(code_part(line)) and "checked:" not in line:
                bad.append(f"  {path.relative_to(root)}:{n}: {stripped}")
    if bad:
        print("kernel arguments indexed without a check (use tessera/sdk/kernel_args.hpp or .h, "
              'or say "checked: <bound>" on the line):')
        print("\n".join(bad))
        return 1
    print(f"no unchecked args[]/outputs[] indexing in {len(files)} plugin and example sources")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
