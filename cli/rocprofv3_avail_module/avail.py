"""Counter listing for tools that import rocprofv3's `rocprofv3_avail_module.avail`.

rocprof-compute imports this module from `<prefix>/bin` (the directory of a `rocprofv3`
installed by `install.sh --rocprofv3-alias`), sets `loadLibrary.libname` and calls
`get_counters()`. The answer comes from `rtl-pmc --list-avail`, run from this module's
installation prefix with the caller's environment (so `ROCPROFILER_METRICS_PATH` adds its
definitions, as it does for a profile); no library is loaded.
"""

import os
import subprocess
import types

# rocprof-compute assigns the path of rocprofiler-sdk's listing library here; rtl-pmc lists
# counters itself, so the value is kept only for the caller to read back.
loadLibrary = types.SimpleNamespace(libname=None)


def rtl_pmc_path():
    """The rtl-pmc binary installed beside this module's directory."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "rtl-pmc")


def parse_listing(text):
    """`rtl-pmc --list-avail` text -> {GPU index: [counter, ...]}.

    Each counter is a namespace with `name`, `description`, `dimensions` and either `block`
    (a hardware counter) or `expression` (a derived one).
    """
    agents = {}
    counters = None
    counter = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            counter = None
            continue
        key = key.strip()
        value = value.strip()
        if key == "GPU":
            counters = agents.setdefault(int(value), [])
            counter = None
        elif key == "Counter_Name" and counters is not None:
            counter = types.SimpleNamespace(name=value)
            counters.append(counter)
        elif counter is not None and key in ("Description", "Block", "Expression", "Dimensions"):
            setattr(counter, key.lower(), value)
    return agents


def get_counters():
    """The counters of every GPU rtl-pmc finds, keyed by GPU index (0 first)."""
    result = subprocess.run(
        [rtl_pmc_path(), "--list-avail"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            "%s --list-avail failed (exit %d): %s"
            % (rtl_pmc_path(), result.returncode, result.stderr.strip())
        )
    return parse_listing(result.stdout)
