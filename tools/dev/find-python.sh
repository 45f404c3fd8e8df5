#!/usr/bin/env sh
# Prints the path of the interpreter `make install` builds .venv with:
# Python 3.13 if it can be found (on PATH, or through pyenv without being selected),
# else the newest python3 that is >= 3.11. Exits non-zero if none fits.
works() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; }
for candidate in "$(command -v python3.13 2>/dev/null)" \
                 "$(PYENV_VERSION=3.13.0 pyenv which python3.13 2>/dev/null)" \
                 "$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13 2>/dev/null | tail -n 1)"; do
  if [ -n "$candidate" ] && PYENV_VERSION=3.13.0 works "$candidate"; then
    # resolve pyenv shims to the real interpreter so the venv does not depend on PYENV_VERSION
    PYENV_VERSION=3.13.0 "$candidate" -c 'import sys; print(sys.executable)'; exit 0
  fi
done
for candidate in python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && works "$candidate"; then
    "$candidate" -c 'import sys; print(sys.executable)'; exit 0
  fi
done
echo "book-agent needs Python >= 3.11 (3.13 preferred); none found" >&2
exit 1
