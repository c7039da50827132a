package artefact

// ProgramFlag is the launcher's flag that pins a program's digest:
// --program-sha256 PATH=sha256:HEX, one per file. A server's program (or a
// script it is given) that a read-write grant of any server holds can be
// rewritten between launches; the artefact names such files
// (programPins), the client entry pins their digests, and the launcher
// refuses (exit 8) other bytes, or a pin missing from the entry.
const ProgramFlag = "program-sha256"

// ProgramPin renders one flag value.
func ProgramPin(path, digest string) string { return path + "=" + digest }
