package lint

import "strings"

// The images of well-known MCP servers and who publishes them: an image
// whose repository name is one of these, pulled from a public registry
// under a namespace that is not its publisher's, is a copy built by
// another party (IMAGE_MIRROR). Only names in this table are judged: an
// image of another name is nobody's copy as far as lint knows, and a
// private registry (a host not in publicRegistries: the user's own
// organisation's, a pull-through cache) is the user's own choice.

// officialImage is one server's image: its repository name (the last part
// of the image's path) and its publishers' repositories, canonical
// (registry/namespace/name); a publisher ending in "/" is a namespace all
// of whose images are that publisher's.
type officialImage struct {
	Name      string
	Publisher []string
}

// referenceServers are the MCP reference servers (and the archived ones
// still pulled), whose images Docker's catalogue (docker.io/mcp/NAME)
// publishes; their packages are named mcp-server-NAME and server-NAME.
var referenceServers = []string{"aws-kb-retrieval", "brave-search", "everart", "everything", "fetch", "filesystem",
	"gdrive", "git", "github", "gitlab", "google-maps", "memory", "postgres", "puppeteer", "redis", "sentry",
	"sequentialthinking", "slack", "sqlite", "time"}

// officialImages is the table, built once.
var officialImages = func() []officialImage {
	t := []officialImage{
		{"github-mcp-server", []string{"ghcr.io/github/github-mcp-server"}},
		{"mcp-grafana", []string{"docker.io/grafana/mcp-grafana"}},
		{"terraform-mcp-server", []string{"docker.io/hashicorp/terraform-mcp-server"}},
		{"mcp-atlassian", []string{"ghcr.io/sooperset/mcp-atlassian"}},
		{"mongodb-mcp-server", []string{"docker.io/mongodb/mongodb-mcp-server"}},
	}
	for _, r := range referenceServers {
		for _, name := range []string{"mcp-server-" + r, "server-" + r} {
			t = append(t, officialImage{name, []string{"docker.io/mcp/" + r}})
		}
	}
	return t
}()

// anyPublisher are namespaces whose every image is its publisher's:
// Docker's MCP catalogue and the protocol's own organisation.
var anyPublisher = []string{"docker.io/mcp/", "docker.io/modelcontextprotocol/", "ghcr.io/modelcontextprotocol/"}

// publicRegistries are the registries where anyone can publish under a
// namespace of their own.
var publicRegistries = map[string]bool{"docker.io": true, "ghcr.io": true, "quay.io": true, "public.ecr.aws": true,
	"registry.gitlab.com": true, "gcr.io": true}

// canonicalImage is an image's repository (no tag, no digest) with its
// registry: mcp/github is docker.io/mcp/github, ubuntu docker.io/library/ubuntu.
func canonicalImage(name string) string {
	first, rest, ok := strings.Cut(name, "/")
	switch {
	case !ok:
		return "docker.io/library/" + name
	case first == "index.docker.io" || first == "registry-1.docker.io" || first == "registry.hub.docker.com":
		return "docker.io/" + rest
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + name
	}
	return name
}

// mirrorOf returns the official repository of which image (a reference as
// written, with its tag or digest) is another party's copy, "" when it is
// none: its name is not in the table, it is the publisher's, or it comes
// from a private registry.
func mirrorOf(image string) string {
	name, _, _ := imageRef(image)
	repo := canonicalImage(strings.ToLower(name))
	registry, _, _ := strings.Cut(repo, "/")
	// A bare name (github-mcp-server:1) is an image built here: Docker's
	// official images (library/) hold no MCP server.
	if !publicRegistries[registry] || strings.HasPrefix(repo, "docker.io/library/") {
		return ""
	}
	for _, p := range anyPublisher {
		if strings.HasPrefix(repo, p) {
			return ""
		}
	}
	base := repo[strings.LastIndex(repo, "/")+1:]
	for _, o := range officialImages {
		if o.Name != base {
			continue
		}
		for _, p := range o.Publisher {
			if repo == p || strings.HasSuffix(p, "/") && strings.HasPrefix(repo, p) {
				return ""
			}
		}
		return strings.TrimPrefix(o.Publisher[0], "docker.io/")
	}
	return ""
}
