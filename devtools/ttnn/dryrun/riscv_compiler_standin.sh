#!/bin/sh
# Dry-run stand-in for the sfpi RISC-V compiler driver (riscv-tt-elf-g++), installed by
# devtools/ttnn/dryrun/environment.py into the SIDE venv's ttnn/runtime/sfpi/compiler/bin/ only.
# It lets the real ttnn wheel open a MOCK p150; nothing it writes can run on a device.
#   --version            prints the version line of the wheel's sfpi release (@SFPI@ is filled in
#                        from tt_metal/sfpi-version): tt-metal hashes it into its build key, which
#                        then names the wheel's pre-compiled firmware, so no firmware is built
#   -x c++-header        refused: tt-metal then compiles without a precompiled header
#   -c SRC... -o X       "compiles" to an empty object (and a make-style -MF depfile)
#   anything else -o X   "links": X becomes a copy of placeholder-kernel.elf (kernel_elf.py)
if [ "$1" = --version ]; then
  echo 'riscv-tt-elf-g++ (tenstorrent/sfpi:@SFPI@) 15.1.0'
  exit 0
fi
[ -n "$TT_DRYRUN_COMPILER_LOG" ] && printf '%s\n' "$*" >> "$TT_DRYRUN_COMPILER_LOG"
target=; depfile=; sources=; objonly=no; want=
for arg in "$@"; do
  if [ -n "$want" ]; then
    case "$want" in
      out) target=$arg ;;
      dep) depfile=$arg ;;
      lang) if [ "$arg" = c++-header ]; then echo 'dry-run compiler: no PCH' >&2; exit 1; fi ;;
    esac
    want=; continue
  fi
  case "$arg" in
    -o) want=out ;;
    -MF) want=dep ;;
    -x) want=lang ;;
    -c) objonly=yes ;;
    *.c|*.cc|*.cpp|*.S) sources="$sources $arg" ;;
  esac
done
if [ -z "$target" ]; then echo "dry-run compiler: no -o in: $*" >&2; exit 1; fi
if [ "$objonly" = yes ]; then
  : > "$target"
  if [ -n "$depfile" ]; then echo "$target:$sources" > "$depfile"; fi
  exit 0
fi
exec cp "$(dirname "$0")/placeholder-kernel.elf" "$target"
