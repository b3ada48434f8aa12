#!/usr/bin/python3
"""Make a local folder holding the same names as a mounted archive's root.

    /usr/bin/python3 scripts/bench/mirror.py MNT LOCAL OUT

OUT gets one entry for each of MNT's root entries, of the same kind and
size: its folders (KEY/, made empty: `ls -l` of the root does not look
inside them), its files (KEY.npy copied from LOCAL, the unzipped archive;
the others, KEY.ra, read from MNT). It is the local folder that `ls -l` of
the mount's root is compared with entry for entry.
"""
import os
import shutil
import sys


def main(mnt, local, out):
    os.mkdir(out)
    for e in os.scandir(mnt):
        dst = os.path.join(out, e.name)
        if e.is_dir():
            os.mkdir(dst)
            continue
        src = os.path.join(local, e.name)
        shutil.copyfile(src if os.path.exists(src) else e.path, dst)


if __name__ == "__main__":
    main(*sys.argv[1:4])
