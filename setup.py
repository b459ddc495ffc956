"""The pip package (`pip install --no-build-isolation .`, docs/python.md).

build_ext configures and builds this tree with CMake (Release, PROJECTOR_RELOCATABLE=ON, no tests,
benchmarks or fuzzers), then lays the package out as

    projector/__init__.py                   re-exports the compiled module
    projector/projector.cpython-*.so        the compiled module (python/module.cpp)
    projector/bin/projector                 the CLI; the `projector` command (projector._cli) runs it
    projector/data/                         the catalogues (this tree's data/)
    projector/web/                          the HTML report's page script, style and Vega bundles

The relocatable build compiles in no path of this tree: the module and the CLI find data/ and web/
beside themselves, or one folder up (include/util/projector/util/install_dir.h). The CMake build
folder is build/temp.*/cmake, reused by the next install.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# What src/report/html_report.cpp reads from web/, and only that (not all of web/node_modules).
WEB_FILES = ("report.js", "report.css", "node_modules/vega/build/vega.min.js",
             "node_modules/vega-lite/build/vega-lite.min.js",
             "node_modules/vega-embed/build/vega-embed.min.js")


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(projector VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    """The compiled module; CMake builds it (target projector_python), not setuptools."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class BuildWithCMake(build_ext):

    def build_extension(self, ext):
        if self.inplace:
            raise SystemExit("projector: editable installs are not supported; for development "
                             "use the CMake build and PYTHONPATH=build/release/python")
        missing = [f for f in WEB_FILES if not (ROOT / "web" / f).is_file()]
        if missing:
            raise SystemExit("projector: web/{} is missing: run scripts/bootstrap.sh (npm ci in "
                             "web/) first".format(missing[0]))
        build = Path(self.build_temp).resolve() / "cmake"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build),
                     "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
                     "-DPROJECTOR_RELOCATABLE=ON", "-DPROJECTOR_BUILD_PYTHON=ON",
                     "-DPROJECTOR_BUILD_TESTS=OFF", "-DPROJECTOR_BUILD_BENCH=OFF",
                     "-DPROJECTOR_BUILD_FUZZERS=OFF", "-DPython_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        compile_ = ["cmake", "--build", str(build), "--target", "projector", "projector_python"]
        # CMake's own CMAKE_BUILD_PARALLEL_LEVEL, when set, decides the number of jobs.
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            compile_ += ["-j", str(os.cpu_count() or 1)]
        for command in (configure, compile_):
            print(" ".join(command), flush=True)
            subprocess.run(command, check=True)

        module = Path(self.get_ext_fullpath(ext.name))
        package = module.parent
        built = sorted((build / "python").glob("projector*.so"))
        if len(built) != 1:
            raise SystemExit("projector: expected one built module in {}, found {}".format(
                build / "python", [p.name for p in built]))
        package.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], module)
        (package / "bin").mkdir(exist_ok=True)
        shutil.copy2(build / "projector", package / "bin" / "projector")
        shutil.rmtree(package / "data", ignore_errors=True)
        shutil.copytree(ROOT / "data", package / "data")
        shutil.rmtree(package / "web", ignore_errors=True)
        for name in WEB_FILES:
            (package / "web" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / "web" / name, package / "web" / name)


setup(
    version=project_version(),
    packages=["projector"],
    package_dir={"projector": "python/projector"},
    ext_modules=[CMakeExtension("projector.projector")],
    cmdclass={"build_ext": BuildWithCMake},
    zip_safe=False,
)
