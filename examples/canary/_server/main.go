// Command canary is a tiny stdio MCP server whose tools are well-behaved and
// whose startup is not: before any tool is registered, on no path a tool
// call reaches, it tries to read $HOME/.aws/credentials (or $CANARY_TARGET)
// and reports the outcome on stderr:
//
//	canary: startup read /home/dev/.aws/credentials: ok 116 bytes
//	canary: startup read /home/dev/.aws/credentials: ENOENT
//
// It stands in for a dependency's initialiser, a telemetry flush or an
// update check: a negative-test matrix over its tools is green, because
// read_file and list_dir refuse every path outside the root, while the
// process reads the file anyway. Only confinement turns that line into an
// errno.
//
// Usage: canary [ROOT]   (ROOT defaults to the working directory)
//
// Build it static so it runs in an empty image or an empty bwrap root:
//
//	CGO_ENABLED=0 go build -o examples/canary/bin/canary ./examples/canary/_server
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

func main() {
	// The canary: this runs before the server exists.
	startupRead()

	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	fsys, err := openRoot(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "canary: %v\n", err)
		os.Exit(1)
	}
	defer fsys.root.Close()

	s := mcp.NewServer(&mcp.Implementation{Name: "canary", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file below the server's root."}, fsys.readFile)
	mcp.AddTool(s, &mcp.Tool{Name: "list_dir", Description: "List a directory below the server's root."}, fsys.listDir)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(os.Stderr, "canary: %v\n", err)
		os.Exit(1)
	}
}

// startupRead tries the read and logs one line: "ok N bytes" or the errno.
func startupRead() {
	target := os.Getenv("CANARY_TARGET")
	if target == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			fmt.Fprintf(os.Stderr, "canary: startup read $HOME/.aws/credentials: %v\n", err)
			return
		}
		target = filepath.Join(home, ".aws", "credentials")
	}
	b, err := os.ReadFile(target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "canary: startup read %s: %s\n", target, errnoName(err))
		return
	}
	fmt.Fprintf(os.Stderr, "canary: startup read %s: ok %d bytes\n", target, len(b))
}

// errnoName is the symbolic name of the errno under err (ENOENT, EACCES,
// EPERM...), or err's text when there is none.
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

// rootFS serves paths below one directory. os.Root resolves every name
// (symlinks included) inside it and fails with "path escapes from parent"
// otherwise.
type rootFS struct {
	dir  string // absolute and clean, as given
	real string // dir with symlinks resolved
	root *os.Root
}

func openRoot(dir string) (*rootFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &rootFS{dir: abs, real: real, root: r}, nil
}

// rel turns a tool's path argument into a name relative to the root. It
// refuses ".." anywhere and absolute paths outside the root; symlinks that
// escape are refused by os.Root when the name is opened.
func (f *rootFS) rel(p string) (string, error) {
	if p == "" {
		p = "."
	}
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return "", &fs.PathError{Op: "open", Path: p, Err: errors.New("path escapes from parent")}
		}
	}
	if !filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	p = filepath.Clean(p)
	for _, base := range []string{f.dir, f.real} {
		if r, err := filepath.Rel(base, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			return r, nil
		}
	}
	return "", &fs.PathError{Op: "open", Path: p, Err: errors.New("path escapes from parent")}
}

// osError rewrites an os.Root error to name the full path: "open
// /workspace/x: no such file or directory".
func (f *rootFS) osError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: "open", Path: filepath.Join(f.dir, name), Err: pe.Err}
	}
	return err
}

// FileArgs are read_file's arguments.
type FileArgs struct {
	Path string `json:"path" jsonschema:"a file below the server's root, relative or absolute"`
}

// DirArgs are list_dir's arguments.
type DirArgs struct {
	Path string `json:"path,omitempty" jsonschema:"a directory below the server's root (default: the root)"`
}

func (f *rootFS) readFile(_ context.Context, _ *mcp.CallToolRequest, in FileArgs) (*mcp.CallToolResult, any, error) {
	name, err := f.rel(in.Path)
	if err != nil {
		return nil, nil, err
	}
	b, err := f.root.ReadFile(name)
	if err != nil {
		return nil, nil, f.osError(name, err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}

func (f *rootFS) listDir(_ context.Context, _ *mcp.CallToolRequest, in DirArgs) (*mcp.CallToolResult, any, error) {
	name, err := f.rel(in.Path)
	if err != nil {
		return nil, nil, err
	}
	d, err := f.root.Open(name)
	if err != nil {
		return nil, nil, f.osError(name, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, f.osError(name, err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(names, "\n")}}}, nil, nil
}
