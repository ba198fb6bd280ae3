# setup.py: the perfmod package for pip (pip install ./python): perfmod/__init__.py made from its template with libperfmod's directory and version as pkg-config gives them (perfmod.pc, installed by make install).
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    """What pkg-config says of perfmod, or a stop that says how to fix it."""
    try:
        out = subprocess.run(["pkg-config", *args, "perfmod"], check=True,
                             capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit("perfmod: pkg-config finds no perfmod.pc: install perfmod first "
                         "(make install) or point PKG_CONFIG_PATH at its lib/pkgconfig")
    return out.stdout.strip()


class BuildPy(build_py):
    """Writes perfmod/__init__.py from perfmod/__init__.py.in, as make does."""

    def run(self):
        super().run()
        with open(os.path.join(HERE, "perfmod", "__init__.py.in")) as f:
            text = f.read()
        text = text.replace("@libdir@", pkg_config("--variable=libdir"))
        text = text.replace("@PACKAGE_VERSION@", pkg_config("--modversion"))
        out = os.path.join(self.build_lib, "perfmod", "__init__.py")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)


setup(name="perfmod", version=pkg_config("--modversion"),
      description="perfmod: training and inference time and memory of deep-learning models "
                  "on GPUs, predicted (ctypes over libperfmod)",
      license="see COPYING", packages=["perfmod"], package_dir={"perfmod": "perfmod"},
      python_requires=">=3.8", cmdclass={"build_py": BuildPy})
