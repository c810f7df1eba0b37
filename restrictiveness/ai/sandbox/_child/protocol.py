"""Constants shared by the parent and the child: exit codes, the violation marker and the names
of the isolation layers (imported by both sides; imports nothing)."""

#: Written before a refused operation's description, on stderr and on the report channel.
MARKER = "\x1e[sandbox-violation] "
#: The child's exit status when the program failed (its status file says why).
EXIT_FAILURE = 86
#: The child's exit status when a required isolation layer could not be set up.
EXIT_SETUP = 87
#: The child's exit status when its status file could not be written for want of room: the
#: program filled its working directory's capped tmpfs (and may hold deleted files in it).
EXIT_NO_ROOM = 88

#: Most bytes of the status file the parent reads (the driver's value and message in it): the
#: parser makes objects of up to 50 times the text's size (16 MiB of ``[{}, {}, ...]``, written
#: by a program in the driver's place, took 813 MiB in the parent).
STATUS_BYTES = 2**20

#: Layers of ``isolation="full"``, in the order they are set up. Each is required.
LAYERS = ("namespaces", "filesystem", "unprivileged-uid", "capabilities", "no-new-privs",
          "rlimits", "landlock", "seccomp")
#: What the in-process guard adds in every mode.
GUARD = "audit-guard"


class LayerError(Exception):
    """An isolation layer could not be set up (raised in the child, reported to the parent)."""

    def __init__(self, layer: str, detail: str) -> None:
        super().__init__(f"{layer}: {detail}")
        self.layer, self.detail = layer, detail
