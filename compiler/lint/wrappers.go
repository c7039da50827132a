package lint

import "github.com/mcpolicy/mcpolicy/compiler/readback"

// wrapperRules judge what clientcfg reads through wrappers and runtimes
// that confine a server by their own means (deno's permissions, ToolHive's
// container), and a whole command line written in "command"; Registry
// sorts rules by ID, wherever they are declared.
func wrapperRules() []*Rule {
	return []*Rule{
		{
			ID: "RUNTIME_PERMISSIONS", Name: "runtime-permissions", Severity: Info,
			Purpose:     "A server runs under its runtime's permission system (deno run without -A, --allow-run or --allow-ffi): the finding lists what the flags grant (read=..., write=..., net=..., env=...), or that they grant nothing.",
			Rationale:   "Deno checks every file, network, environment, subprocess and native-library access of the script and of its dependencies against its flags, and a server spoken to over stdio cannot be asked at a prompt, so what is not granted is denied: the server is confined, not unconfined. It is information, not a warning: the runtime is a weaker wall than an OS sandbox (a bug in it is an escape, and imports are fetched whatever the flags say), but what the flags grant wide is its own finding: -A, --allow-run and --allow-ffi leave the model (DANGEROUS_MODE, an error), --allow-read or --allow-write without a list, or with a home folder, a credential store or a root in it, are UNCONFINED_WIDE_GRANT, --allow-env without a list is RUNTIME_ENV_ALL.",
			Remediation: "Keep each --allow-X to the list the server needs (--allow-read=./data, --allow-net=api.github.com, --allow-env=GITHUB_TOKEN); for an OS-level wall, write a policy and start it through mcpolicy.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "deno", "args": ["run", "--allow-read=./data", "--allow-net=api.github.com", "jsr:@me/server@1.2.0"]}}}`},
			Good:        run(),
			check:       flagRule(readback.FlagRuntimePermissions, "%s"),
		},
		{
			ID: "RUNTIME_ENV_ALL", Name: "runtime-env-all", Severity: Warning,
			Purpose:     "A runtime's permission flags let the server read every environment variable (deno --allow-env or -E without a list).",
			Rationale:   "The server starts with the environment the client gives it: in most clients the user's whole environment, with the tokens and keys in it (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN...), not only the ones it was configured with. A list keeps the runtime's check on the rest.",
			Remediation: "List the variables it reads: --allow-env=GITHUB_TOKEN,LOG_LEVEL.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "deno", "args": ["run", "--allow-env", "--allow-net=api.github.com", "jsr:@me/server@1.2.0"]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "deno", "args": ["run", "--allow-env=GITHUB_TOKEN", "--allow-net=api.github.com", "jsr:@me/server@1.2.0"]}}}`},
			check:       flagRule(readback.FlagRuntimeEnvAll, "%s"),
		},
		{
			ID: "TOOLHIVE_CONTAINER", Name: "toolhive-container", Severity: Warning,
			Purpose:     "A server is started by ToolHive (thv run, thv proxy): in a container ToolHive configures from a permission profile; the finding says what the entry's flags settle (--permission-profile, --isolate-network, --volume) and what lint cannot see.",
			Rationale:   "ToolHive's container mounts no host file but the --volume mounts and the profile's paths, but its network is the profile's (the built-in \"network\" profile, the default for a server not in its registry, opens every outbound connection) and is enforced only with --isolate-network; the registry's profile and a profile file are not in the entry, so a reviewer cannot judge the grants from it. Not unconfined, not judged either: a warning. A --volume of a home folder, a credential store or a root is UNCONFINED_WIDE_GRANT.",
			Remediation: "Name the profile in the entry (--permission-profile none, or a reviewed file in the project) with --isolate-network, and mount only the folder the server works on, read-only where it can; or write a policy and start it through mcpolicy.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"fetch": {"command": "thv", "args": ["run", "fetch"]}}}`},
			Good:        run(),
			check:       flagRule(readback.FlagToolHive, "%s"),
		},
		{
			ID: "COMMAND_LINE_IN_COMMAND", Name: "command-line-in-command", Severity: Warning,
			Purpose:     "\"command\" holds a whole command line (\"npx -y @x/server /path\"), where clients expect one program and take its arguments from \"args\".",
			Rationale:   "Clients start a stdio server without a shell (Node's spawn, Rust's Command), \"command\" naming the program: a client that does not split it looks for a program named \"npx -y @x/server /path\", finds none, and the server fails to start (ENOENT, shown by the client as a bare EOF or a closed connection); a client that splits it runs it, so the same file works in one client and not in another. Lint reads it split, as meant, so the other findings still apply. A path with blanks (C:\\Program Files\\nodejs\\npx.cmd, /Applications/My App/bin/x) is one program's name, not flagged.",
			Remediation: "Put the program alone in \"command\" and each word in \"args\": \"command\": \"npx\", \"args\": [\"-y\", \"@x/server\", \"/path\"].",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker run -i --rm --network none --read-only --cap-drop ALL --security-opt no-new-privileges --user 1000:1000 img:1"}}}`},
			Good:        run(),
			check:       flagRule(readback.FlagCommandLine, "\"command\" holds a whole command line (\"%s\"): a client that does not split it looks for a program of that name and the server fails to start (ENOENT, seen in the client as a bare EOF); put the program in \"command\" and the rest in \"args\""),
		},
	}
}
