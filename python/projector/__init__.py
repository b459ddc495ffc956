"""projector: will a training job fit, and how fast will it run (docs/python.md).

The installed package (`pip install --no-build-isolation .`, setup.py). Everything comes from the
compiled module beside this file, projector.projector (python/module.cpp), re-exported here: the
same module the CMake build writes as build/<preset>/python/projector*.so, where `import projector`
loads it directly. The catalogues (data/) and the HTML report assets (web/) are installed in this
package; the module and the `projector` command (bin/projector) find them there.
"""
from .projector import *  # noqa: F401,F403
