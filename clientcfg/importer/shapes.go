package importer

// Shape is what import knows of one server beyond its entry: whether it
// writes to the paths it is given (else they are mounted read-only), what
// runtime pack it needs. A shape is matched by the npm or Python package
// the entry runs, the Go module path of the binary (its build info), or
// the program's name; the comment of each grant it decides names it.
type Shape struct {
	Name string // shown in comments: "mark3labs' mcp-filesystem-server"
	// What matches it (any): an npm package, a PyPI package, a Go main
	// package path, a program's base name.
	NPM, PyPI, GoPath, Program string
	// WritesArgs: the server writes inside the folders its arguments
	// name (a filesystem server's roots).
	WritesArgs bool
	// WritesFlag: the server writes the file this option names (its
	// value: --memory FILE or --memory=FILE).
	WritesFlag string
	// FolderToo: it writes beside that file too (SQLite's journal), so
	// the folder holding it is granted read-write.
	FolderToo bool
	// WritesEnv: the server writes the file this variable names.
	WritesEnv string
	// URLArgs: its http(s) arguments are the hosts it reaches (a bridge
	// to a remote server): each is an egress destination.
	URLArgs bool
	// Packs it needs besides its runner's.
	Packs []string
	Why   string
}

// Shapes are the servers import knows. Each line says why; add a server
// here, not in code.
var Shapes = []Shape{
	{Name: "@modelcontextprotocol/server-filesystem", NPM: "@modelcontextprotocol/server-filesystem", WritesArgs: true,
		Why: "its tools write_file, edit_file, create_directory and move_file write inside the folders it is given"},
	{Name: "mark3labs' mcp-filesystem-server", GoPath: "github.com/mark3labs/mcp-filesystem-server", Program: "mcp-filesystem-server", WritesArgs: true,
		Why: "its tools write_file, create_directory and move_file write inside the folders it is given"},
	{Name: "the go-sdk memory example", GoPath: "github.com/modelcontextprotocol/go-sdk/examples/server/memory", WritesFlag: "memory",
		Why: "it saves its knowledge graph to the file --memory names (os.WriteFile)"},
	{Name: "@modelcontextprotocol/server-memory", NPM: "@modelcontextprotocol/server-memory", WritesEnv: "MEMORY_FILE_PATH",
		Why: "it saves its knowledge graph to the file MEMORY_FILE_PATH names"},
	{Name: "mcp-remote", NPM: "mcp-remote", URLArgs: true,
		Why: "it bridges stdio to the remote server its URL argument names: that host is what it reaches"},
	{Name: "gopls", GoPath: "golang.org/x/tools/gopls", Program: "gopls", Packs: []string{"go"},
		Why: "gopls runs the go command (go list, go env) on the module it serves: it needs GOROOT, the module cache and a build cache"},
	{Name: "mcp-server-sqlite", PyPI: "mcp-server-sqlite", WritesFlag: "db-path", FolderToo: true,
		Why: "its write_query and create_table tools write the database --db-path names, and SQLite writes its journal beside it"},
	{Name: "mcp-server-git", PyPI: "mcp-server-git",
		Why: "it reads the repository --repository names; its commit and add tools write there only when granted read-write, which import does not"},
}

// shapeFor is the first shape that matches, nil when none does.
func shapeFor(npm, pypi, goPath, program string) *Shape {
	for i := range Shapes {
		s := &Shapes[i]
		switch {
		case npm != "" && s.NPM == npm, pypi != "" && s.PyPI == pypi, goPath != "" && s.GoPath == goPath,
			program != "" && s.Program == program:
			return s
		}
	}
	return nil
}
