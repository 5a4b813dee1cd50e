"""Provides the virtual machine: values, frames, the write log, the machine, its state codec,
checkpoints, the effect journal and the builtins. Imports `runtime.language`, `runtime.llm` and
`runtime.errors`; never `runtime.record` or `runtime.runs`.
"""

from runtime.vm.compiled import use_compiled

use_compiled()  # the compiled machine (`make compiled`) if it is built and fresh
