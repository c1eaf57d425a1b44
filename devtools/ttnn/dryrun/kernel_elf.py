"""The placeholder RISC-V kernel image the dry run's compiler stand-in "links" every kernel to.

tt-metal loads each linked kernel with its ELF reader and XIP pass before it builds a program;
on the mock device nothing is ever executed, so one tiny valid image serves every kernel. What
the loader insists on (tt-metal 0.81.1): an ELF32 little-endian RISC-V executable, 4-byte aligned
offsets, a loadable segment, and at least one relocation section over an allocated section inside
that segment (an image with no relocation section is refused). The image here: one PT_LOAD R+X
segment holding a single `ret`, an empty `.rela.text` for `.text`, and the symbol/string tables
that relocation section refers to.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

EM_RISCV, ET_EXEC = 243, 2
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA = 1, 2, 3, 4
RET = 0x00008067                       # jalr x0, 0(ra)


def _align4(n: int) -> int:
    return (n + 3) & ~3


def placeholder_elf() -> bytes:
    """Bytes of the placeholder image (deterministic)."""
    names = ['', '.text', '.rela.text', '.symtab', '.strtab', '.shstrtab']
    shstrtab = b''.join(n.encode() + b'\0' for n in names)
    name_at = {}
    pos = 0
    for n in names:
        name_at[n] = pos
        pos += len(n) + 1
    ehsize, phsize, shsize = 52, 32, 40
    text = struct.pack('<I', RET)
    symtab = b'\0' * 16                # the mandatory null symbol
    strtab = b'\0'
    # payload layout after the headers: text | symtab | strtab | shstrtab | section headers
    blobs = [('.text', text), ('.symtab', symtab), ('.strtab', strtab), ('.shstrtab', shstrtab)]
    offset, at = ehsize + phsize, {}
    for name, blob in blobs:
        at[name] = offset
        offset = _align4(offset + len(blob))
    shoff = offset
    # (name, type, flags, offset, size, link, info, addralign, entsize); index 0 is null
    headers = [
        ('', 0, 0, 0, 0, 0, 0, 0, 0),
        ('.text', SHT_PROGBITS, 0x6, at['.text'], len(text), 0, 0, 4, 0),       # ALLOC|EXEC
        ('.rela.text', SHT_RELA, 0x40, at['.symtab'], 0, 3, 1, 4, 12),          # INFO_LINK
        ('.symtab', SHT_SYMTAB, 0, at['.symtab'], len(symtab), 4, 1, 4, 16),
        ('.strtab', SHT_STRTAB, 0, at['.strtab'], len(strtab), 0, 0, 1, 0),
        ('.shstrtab', SHT_STRTAB, 0, at['.shstrtab'], len(shstrtab), 0, 0, 1, 0),
    ]
    ident = b'\x7fELF' + bytes([1, 1, 1]) + bytes(9)          # ELFCLASS32, LSB, version 1
    ehdr = ident + struct.pack('<HHIIIIIHHHHHH', ET_EXEC, EM_RISCV, 1, 0, ehsize, shoff, 0,
                               ehsize, phsize, 1, shsize, len(headers), names.index('.shstrtab'))
    phdr = struct.pack('<8I', 1, at['.text'], 0, 0, len(text), len(text), 0x5, 4)  # LOAD R+X
    out = bytearray(ehdr + phdr)
    for name, blob in blobs:
        out += bytes(at[name] - len(out)) + blob
    out += bytes(shoff - len(out))
    for name, *rest in headers:
        sh_type, flags, off, size, link, info, align, entsize = rest
        out += struct.pack('<10I', name_at[name], sh_type, flags, 0, off, size, link, info,
                           align, entsize)
    return bytes(out)


def write(path: Path) -> Path:
    Path(path).write_bytes(placeholder_elf())
    return Path(path)


if __name__ == '__main__':
    write(Path(sys.argv[1]))
