"""man_pages: the command pages rendered as man pages, at build time."""

def _man_pages_impl(ctx):
    out = ctx.actions.declare_directory(ctx.attr.name)
    binary = ctx.executable.binary
    generator = ctx.executable._generator

    # The command list and the version come from the binary itself, so the
    # pages cover exactly the commands it has (md_to_man fails otherwise).
    ctx.actions.run_shell(
        inputs = ctx.files.srcs,
        tools = [binary, generator],
        outputs = [out],
        command = 'set -eo pipefail; version=$("$1" version | head -n 1); ' +
                  '"$1" --list-commands | "$2" "$3" "$version" "${@:4}"',
        arguments = [binary.path, generator.path, out.path] + [f.path for f in ctx.files.srcs],
        mnemonic = "ManPages",
        progress_message = "Rendering the man pages of docs/commands",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

man_pages = rule(
    implementation = _man_pages_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".md"]),
        "binary": attr.label(executable = True, cfg = "target"),
        "_generator": attr.label(default = "//tools:md_to_man", executable = True, cfg = "host"),
    },
)
