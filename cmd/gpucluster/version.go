package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// release is gpucluster's version: CHANGELOG.md's newest entry, held to it by
// TestVersionIsTheChangelogsNewest. A release build may set it (-ldflags "-X main.release=…").
var release = "0.19.2"

// versionText is the version with the commit it was built from, as Go's build records it
// (vcs.revision and vcs.modified; absent from `go run` of a tree without VCS data).
func versionText() string {
	text := "gpucluster " + release
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return text
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev != "" && modified == "true":
		text += " (commit " + rev + ", with uncommitted changes)"
	case rev != "":
		text += " (commit " + rev + ")"
	}
	return text + ", " + info.GoVersion
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	c := newCLI("version", "version", stdout, stderr)
	if code, ok := c.parseFlagsOnly(args, nil); !ok {
		return code
	}
	fmt.Fprintln(stdout, versionText())
	return exitOK
}
