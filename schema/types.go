package schema

// Policy is one validated policy file.
type Policy struct {
	File    string // path as given, used in messages
	Dir     string // absolute folder of the file: relative host paths start here
	Version string
	Servers []Server // in declaration order
}

// Server is one MCP server's confinement as written in the policy.
type Server struct {
	Name        string
	Pos         Pos
	Description string
	Image       string
	Command     []string
	Workdir     string
	WorkdirPos  Pos
	User        string
	UserPos     Pos
	Mounts      []Mount
	Scratch     []Scratch // one, or (ScratchList) as a list
	ScratchList bool
	Proc        bool // the server's own procfs (landlock mounts it only then)
	ProcPos     Pos
	Env         []EnvName
	SetEnv      []EnvValue // sorted by name
	Network     Network
	Unprotect   []Unprotect
	Limits      Limits
	Runtime     string
	Accept      []Accept
	Backends    []string // nil: the default for the server
	BackendsPos Pos
	Waive       []Waiver
	Packs       []PackName
	Tools       *Tools // nil: no tools section, no relay
	// Credentials are the credentials section, sorted by name.
	Credentials []Credential
}

// Credential is one entry of a server's credentials section: a value the
// server may use, never hold (docs/credentials.md).
type Credential struct {
	Name string // the variable the server reads (the map's key)
	Pos  Pos
	// FromEnv and FromCommand: where the value comes from (both empty: the
	// launch's variable of the same name).
	FromEnv     string
	FromCommand []string
	FromPos     Pos // the from field's, the entry's when absent
	To          []string
	ToPos       []Pos
	// Header, Format and Query: how it is sent (all empty: the default,
	// Authorization: Bearer {}).
	Header, Format, Query string
	AsPos                 Pos // the as field's, the entry's when absent
}

// Tools is a server's tools section: the tool surface a client sees and
// calls (docs/tools.md).
type Tools struct {
	Pos         Pos
	Allow       []ToolName
	Deny        []ToolName
	Args        []ToolArg // sorted by tool, then argument
	Pin         bool
	PinPos      Pos
	OnPinChange string // "hide" (the default) or "refuse"
	// OnPinChangePos is the field's position, the section's when it is absent.
	OnPinChangePos Pos
}

// ToolName is one name or glob of allow or deny.
type ToolName struct {
	Pattern string
	Pos     Pos
}

// ToolArg constrains one argument of one tool (or glob of tools).
type ToolArg struct {
	Tool, Arg string
	Pos       Pos // of the ARG: {...} field
	Under     []string
	UnderPos  []Pos
	Pattern   string
	PatternAt Pos
	Enum      []string
	MaxBytes  int64
}

// PackName names one runtime pack the server uses (#Packs).
type PackName struct {
	Name string
	Pos  Pos
}

// Waiver accepts one lint rule's findings for a server.
type Waiver struct {
	Rule, Reason, Expires string
	Pos                   Pos
}

// Accept is one accepted degradation.
type Accept struct {
	Name string
	Pos  Pos
}

// Mount grants a host path inside the sandbox.
type Mount struct {
	Source    string
	Target    string
	Mode      string // "ro" or "rw"
	Pos       Pos    // of the mount
	SourcePos Pos
	TargetPos Pos
	// Hide are the paths below the source the server may not reach, as
	// written, each with its position (HidePos[i]); HideAt is the field's.
	Hide    []string
	HidePos []Pos
	HideAt  Pos
}

// Scratch grants one bounded, writable tmpfs.
type Scratch struct {
	Target    string
	Size      string
	Pos       Pos
	TargetPos Pos
	SizePos   Pos
}

// EnvName grants one environment variable, by name.
type EnvName struct {
	Name string
	Pos  Pos
}

// EnvValue sets one environment variable to a constant value.
type EnvValue struct {
	Name  string
	Value string
	Pos   Pos // of the NAME: value field
}

// Network is "none" unless Allow lists egress destinations.
type Network struct {
	Allow []Egress
	Pos   Pos
}

// Egress is one allowed "host:port" destination.
type Egress struct {
	Dest string
	Pos  Pos
}

// Unprotect opts one protected path out of protection.
type Unprotect struct {
	Name string
	Pos  Pos
}

// Limits are subtractions; a zero value means "not set".
type Limits struct {
	Memory    string
	Pids      int64
	CPUs      float64
	Pos       Pos
	MemoryPos Pos
}

// defaultPos puts an absent from or as at the entry: the default is
// decided there.
func (c Credential) defaultPos() Credential {
	if c.FromPos.Line == 0 {
		c.FromPos = c.Pos
	}
	if c.AsPos.Line == 0 {
		c.AsPos = c.Pos
	}
	return c
}
