"""The onnxstream-rewrite wheel: the onnxstream package and the C API's shared library.

Built by scripts/build_wheel.sh, which stages this folder with the library inside the
package and sets ONNXSTREAM_WHEEL_VERSION (the project's version in CMakeLists.txt). The
wheel is tagged py3-none-<platform>: the package is pure Python over ctypes, so any
Python 3 can use it, but the library inside is built for one platform.
"""
import os

from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel

LIBRARY = "libonnxstream-c.so.0"


class binary_distribution(Distribution):
    # The library inside makes the wheel platform-specific (and its files go to platlib).
    def has_ext_modules(self):
        return True


class platform_wheel(bdist_wheel):
    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


here = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(here, "onnxstream", LIBRARY)):
    raise SystemExit(f"onnxstream/{LIBRARY} is missing: build the wheel with scripts/build_wheel.sh")

setup(
    name="onnxstream-rewrite",
    version=os.environ.get("ONNXSTREAM_WHEEL_VERSION", "0.0.0"),
    description="Rewrite ONNX models of any size without loading their weights "
                "(merge, split, repack, verify, diff, optimize, convert, export)",
    long_description=open(os.path.join(here, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=["onnxstream"],
    package_data={"onnxstream": [LIBRARY, "py.typed", "__init__.pyi"]},
    python_requires=">=3.8",
    zip_safe=False,
    distclass=binary_distribution,
    cmdclass={"bdist_wheel": platform_wheel},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Operating System :: POSIX :: Linux",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
