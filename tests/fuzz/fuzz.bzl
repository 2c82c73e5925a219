"""zipnn_fuzz_target: one fuzz target, built two ways (docs/fuzzing.md)."""

def zipnn_fuzz_target(name, deps):
    """A fuzz target from `name`.cc, which defines LLVMFuzzerTestOneInput.

    `name` is a libFuzzer binary under --config=fuzz (--define=fuzz=libfuzzer)
    and, in the ordinary build, a program that replays the files it is given
    (replay_main.cc). `name`_entry is the same source with its entry point
    renamed to `name`_entry, so that the replay test can link every target
    into one binary.

    Args:
      name: the target, e.g. "container_fuzz".
      deps: the libraries the target exercises.
    """
    native.cc_binary(
        name = name,
        srcs = [name + ".cc"],
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            ":libfuzzer": [],
            "//conditions:default": [":replay_main"],
        }),
    )
    native.cc_library(
        name = name + "_entry",
        testonly = True,
        srcs = [name + ".cc"],
        local_defines = ["LLVMFuzzerTestOneInput=" + name + "_entry"],
        deps = deps,
    )
