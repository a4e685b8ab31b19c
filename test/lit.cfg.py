# -*- Python -*-
# lit configuration for the Mosaic regression tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Mosaic"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mosaic_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

# Captured variables must not leak between CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.use_default_substitutions()
config.substitutions.append(("%mosaic_src_root", config.mosaic_src_root))
config.substitutions.append(("%mosaic_obj_root", config.mosaic_obj_root))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["mosaic-opt"], [config.mosaic_tools_dir, config.llvm_tools_dir]
)
