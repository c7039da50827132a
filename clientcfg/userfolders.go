package clientcfg

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// userFolders are the folders of a home that hold a kind of the user's
// files rather than one project: what a desktop, a browser, a sync client
// or a habit fills. Handed whole to a server nothing confines, each is as
// wide, for what a prompt injection reaches, as the home. Matched, case
// folded, as the first name below a home; a project inside one
// (~/Documents/thesis) is a project.
var userFolders = map[string]bool{
	"desktop": true, "documents": true, "my documents": true, "downloads": true, "pictures": true,
	"photos": true, "music": true, "movies": true, "videos": true, "public": true, "library": true,
	"appdata": true, "dropbox": true, "google drive": true, "icloud drive": true, "icloud": true,
	"nextcloud": true, "sync": true, "box": true,
	// Folders that hold every project of the user.
	"projects": true, "code": true, "src": true, "source": true, "repos": true, "git": true,
	"github": true, "dev": true, "developer": true, "work": true, "workspace": true, "workspaces": true,
}

// oneDrive is a OneDrive folder, personal or an organisation's
// ("OneDrive - Contoso").
var oneDrive = lazyre.New(`(?i)^onedrive( - .*)?$`)

// syncedFolder is a sync client's folder below a home, or a user folder in
// it: ~/OneDrive - Contoso/Documents, ~/Dropbox/Desktop, macOS's
// ~/Library/CloudStorage/OneDrive-Personal(/Documents), iCloud Drive's
// ~/Library/Mobile Documents(/com~apple~CloudDocs).
var syncedFolder = lazyre.New(`(?i)^((onedrive( - [^/]*)?|dropbox|google drive|icloud drive|nextcloud|box)/(desktop|documents|downloads|pictures|music|videos|movies)|library/cloudstorage(/[^/]+(/(desktop|documents|downloads|pictures))?)?|library/mobile documents(/com~apple~clouddocs(/(desktop|documents|downloads))?)?)$`)

// hostSpelling writes a path a config may spell as a URL or a Windows
// share in the form lint.ReadHostPath reads: file:///Users/x/Desktop is
// /Users/x/Desktop, file:///C:/Users/x is C:/Users/x, and a WSL
// distribution's share (\\wsl$\Ubuntu\home\x, \\wsl.localhost\...)
// is the distribution's own path (/home/x).
func hostSpelling(s string) string {
	if rest, ok := strings.CutPrefix(s, "file://"); ok {
		s = rest
		if len(s) > 2 && s[0] == '/' && s[2] == ':' { // file:///C:/Users
			s = s[1:]
		}
	}
	if m := wslShare.FindStringSubmatch(lint.SlashPath(s)); m != nil {
		return "/" + m[1]
	}
	return s
}

// wslShare is a WSL distribution's files seen from Windows.
var wslShare = lazyre.New(`(?i)^//wsl(?:\$|\.localhost)/[^/]+/?(.*)$`)

// shareTop is a Windows share itself (\\server\share): all of it.
var shareTop = lazyre.New(`^//[^/]+/[^/]+/?$`)

// volume is a removable or mounted volume, or a WSL drive's top folder: a
// whole disk's files (/Volumes/Backup, /media/alice/USB, /run/media/...,
// /mnt/d/Data).
var volume = lazyre.New(`^(/Volumes/[^/]+|/media/[^/]+(/[^/]+)?|/run/media/[^/]+/[^/]+|/mnt/[A-Za-z]/[^/]+)$`)

// driveFolder is a folder at the top of a Windows drive (D:\Data, E:/Photos).
var driveFolder = lazyre.New(`^[A-Za-z]:/[^/]+$`)

// userFolder says what a path read by lint.ReadHostPath is when it is one
// of the user's folders (userFolders, below a home), a folder at the top
// of a drive, or a mounted volume; "" otherwise. s is the path as written.
func userFolder(f lint.PathFacts, s string) string {
	if f.Home != "" && f.Sub != "." && !strings.Contains(f.Sub, "/") {
		if userFolders[strings.ToLower(f.Sub)] || oneDrive.MatchString(f.Sub) {
			return "the user folder " + s
		}
		return ""
	}
	if f.Home != "" && syncedFolder.MatchString(f.Sub) {
		return "the user folder " + s
	}
	if f.Home != "" {
		return ""
	}
	switch {
	case shareTop.MatchString(lint.SlashPath(s)):
		return "the whole network share " + s
	case volume.MatchString(f.Path) && !strings.EqualFold(f.Path[strings.LastIndex(f.Path, "/")+1:], "users"):
		return "the whole volume " + s
	case driveFolder.MatchString(f.Path) && !strings.EqualFold(f.Path[3:], "users"):
		return "the top-level folder " + s + " of drive " + f.Path[:2]
	}
	return ""
}
