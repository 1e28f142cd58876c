"""Put on the path of the harness's judges (verify, oracle) by pytest-wfbench.

Judges run with PYTHONSAFEPATH=1, so the working directory (the agent's
workspace) is not searched first; it is appended here, last, so the project's
own modules import while nothing in the workspace can shadow an installed
package such as pytest.
"""

import os
import sys

_cwd = os.getcwd()
if _cwd not in sys.path:
    sys.path.append(_cwd)
