package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/internal/preflight"
	"github.com/gpucluster/gpucluster/test/docblocks"
)

// exitNote is the exit code a command's trailing comment states ("# exit 1").
var exitNote = regexp.MustCompile(`#\s*exit (\d+)\b`)

// TestEveryDocumentedCommandRuns runs every command README.md and docs/ show, as written, from
// the repository root: a copy of its Pulumi.yaml and stacks (with links to the rest), so that
// plan's bundles, expire's edits and the files the documents create stay in a temporary
// directory. In the documents' order:
//   - a yaml block whose first line is "# <path>" is a file the reader creates: it is written;
//   - a sh block's gpucluster commands (gpucluster, bin/gpucluster, go run ./cmd/gpucluster) run
//     and exit as their "# exit N" says (0 otherwise); in a "sh cluster" or "sh walkthrough"
//     block their input comes from a cluster, so they must only be accepted (no usage error):
//     the real-engine tier runs the walkthroughs as written (docblocks.Walkthrough). go commands name packages
//     that exist, make commands targets the Makefile has; pulumi, kubectl, aws and jq, which need
//     an account, are only recognised;
//   - a block's "$ gpucluster …" lines run, and the lines after each are its real output (all of
//     it; or its end, after a first line "…"), stdout then stderr.
func TestEveryDocumentedCommandRuns(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append([]string{"../../README.md"}, docs...)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The cluster commands reach no cluster (never the one a developer's kubeconfig names), and
	// `verify --wait` waits on a clock of its own, not ten real minutes.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-cluster"))
	defer func(n func() time.Time, s func(time.Duration)) { now, sleep = n, s }(now, sleep)
	var waited time.Duration
	base := now
	now = func() time.Time { return base().Add(waited) }
	sleep = func(d time.Duration) { waited += d }
	for _, doc := range docs {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			root := copyProject(t)
			linkRest(t, repo, root)
			ran := 0
			for _, block := range docblocks.Read(string(b)) {
				info, text := block.Info, block.Text
				switch {
				case info == "yaml" && strings.HasPrefix(text, "# "):
					path, _, _ := strings.Cut(strings.TrimPrefix(text, "# "), "\n")
					os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755)
					if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				case info == "sh" || info == docblocks.Cluster || info == docblocks.Walkthrough:
					for _, line := range strings.Split(text, "\n") {
						ran += runDocLine(t, root, line, info != "sh")
					}
				default:
					ran += runShownOutputs(t, root, text)
				}
			}
			t.Logf("%d gpucluster commands run", ran)
		})
	}
}

// linkRest links every top-level entry of the repository the copy lacks (internal/, the test
// logs under it, …) except review/ and .git, so documented paths resolve as in the checkout.
func linkRest(t *testing.T, repo, root string) {
	t.Helper()
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "review" || name == ".git" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(repo, name), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// runDocLine checks one line of a sh block and returns 1 if it ran a gpucluster command.
func runDocLine(t *testing.T, root, line string, cluster bool) int {
	t.Helper()
	command, _, _ := strings.Cut(line, " #")
	command = strings.TrimSpace(command)
	if command == "" || strings.HasPrefix(command, "#") {
		return 0
	}
	ran := 0
	for i, stage := range strings.Split(command, " | ") {
		words := strings.Fields(stage)
		for len(words) > 0 && strings.Contains(words[0], "=") { // VAR=value prefixes
			words = words[1:]
		}
		var out string
		if n := len(words); n > 2 && words[n-2] == ">" {
			words, out = words[:n-2], words[n-1]
		}
		if len(words) == 0 {
			t.Errorf("%q: no command", line)
			continue
		}
		args, isCLI := cliArgs(words)
		switch {
		case isCLI:
			if i > 0 {
				t.Errorf("%q: gpucluster reads no pipe here", line)
			}
			ran++
			code, stdout, stderr := runCLI(args...)
			want := expectedExit(line)
			switch {
			case cluster && code == exitUsage:
				t.Errorf("%q: a usage error (exit 2): %s", line, stderr)
			case !cluster && code != want:
				t.Errorf("%q: exit %d, the document says %d: %s", line, code, want, stderr)
			}
			if out != "" {
				os.WriteFile(filepath.Join(root, out), []byte(stdout), 0o644)
			}
		case words[0] == "go":
			checkGoCommand(t, root, line, words)
		case words[0] == "make":
			checkMakeTargets(t, root, line, words[1:])
		case words[0] == "pulumi" || words[0] == "kubectl" || words[0] == "aws" || words[0] == "jq":
			// needs an AWS account or a cluster: recognised, not run
		default:
			t.Errorf("%q: %s is not a program the documents may show (gpucluster, go, make, pulumi, kubectl, aws, jq)", line, words[0])
		}
	}
	return ran
}

// cliArgs are the arguments of a gpucluster command line, however it is invoked.
func cliArgs(words []string) ([]string, bool) {
	switch {
	case words[0] == "gpucluster" || words[0] == "bin/gpucluster":
		return words[1:], true
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/gpucluster":
		return words[3:], true
	}
	return nil, false
}

// expectedExit is the exit code a line's comment states, 0 if none.
func expectedExit(line string) int {
	if m := exitNote.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return exitOK
}

// checkMakeTargets: a make command the documents show names targets the Makefile has (make test
// runs every test, which this test is part of: it is not run from here).
func checkMakeTargets(t *testing.T, root, line string, targets []string) {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
			t.Errorf("%q: the Makefile has no target %s", line, target)
		}
	}
}

// checkGoCommand: a go command the documents show builds, tests or installs packages that exist.
func checkGoCommand(t *testing.T, root, line string, words []string) {
	t.Helper()
	if len(words) < 2 || !strings.Contains(" build test install run vet ", " "+words[1]+" ") {
		t.Errorf("%q: not a go build, test, install, run or vet", line)
		return
	}
	for _, w := range words[2:] {
		if !strings.HasPrefix(w, "./") {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(w, "..."), "/")
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("%q: no package %s", line, w)
		}
	}
}

// runShownOutputs runs the "$ gpucluster …" lines of a block and compares the lines after each
// with the real output. It returns how many it ran.
func runShownOutputs(t *testing.T, root, text string) int {
	t.Helper()
	ran := 0
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		command, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "$ ") {
			j++
		}
		shown := strings.Join(lines[i+1:j], "\n")
		cmd, _, _ := strings.Cut(command, " #")
		args, isCLI := cliArgs(strings.Fields(cmd))
		if !isCLI {
			t.Errorf("$ %s: only gpucluster commands are shown with their output", command)
			i = j - 1
			continue
		}
		ran++
		code, stdout, stderr := runCLI(args...)
		if want := expectedExit(command); code != want {
			t.Errorf("$ %s: exit %d, the document says %d", command, code, want)
		}
		out := strings.TrimRight(stdout+stderr, "\n")
		if tail, elided := strings.CutPrefix(shown, "…\n"); elided {
			if !strings.HasSuffix(out, strings.TrimRight(tail, "\n")) {
				t.Errorf("$ %s: the document shows an end that is not the output's end:\n%s\nreal output:\n%s", command, tail, out)
			}
		} else if strings.TrimRight(shown, "\n") != out {
			t.Errorf("$ %s: the document shows\n%s\nreal output:\n%s", command, shown, out)
		}
		i = j - 1
	}
	return ran
}

// TestDocumentedVersionsAreThePins: every version README.md and docs/ state for a pinned
// dependency is the pin itself (go.mod, or the constant the code uses), so a bump that forgets a
// page fails here instead of leaving the page stale.
func TestDocumentedVersionsAreThePins(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	pin := func(module string) string {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` v(\S+)`).FindStringSubmatch(string(gomod))
		if m == nil {
			t.Fatalf("go.mod does not require %s", module)
		}
		return m[1]
	}
	kube := pin("k8s.io/api") // v0.34.1 is Kubernetes v1.34.1
	kube = "1" + strings.TrimPrefix(kube, "0")
	pins := []struct {
		what    *regexp.Regexp
		version string
	}{
		{regexp.MustCompile("(?:pulumi-eks|`eks`) v(\\d+\\.\\d+\\.\\d+)"), pin("github.com/pulumi/pulumi-eks/sdk/v2")},
		{regexp.MustCompile("(?:pulumi-aws|`aws`) v(\\d+\\.\\d+\\.\\d+)"), pin("github.com/pulumi/pulumi-aws/sdk/v6")},
		{regexp.MustCompile("(?:pulumi-kubernetes|`kubernetes`) v(\\d+\\.\\d+\\.\\d+)"), pin("github.com/pulumi/pulumi-kubernetes/sdk/v4")},
		{regexp.MustCompile("kube-(?:apiserver|scheduler) v(\\d+\\.\\d+\\.\\d+)"), kube},
		{regexp.MustCompile("Karpenter v(\\d+\\.\\d+\\.\\d+)"), karpenter.ChartVersion},
		{regexp.MustCompile("Pulumi CLI (\\d+\\.\\d+\\.\\d+)"), preflight.TestedPulumiVersion},
		{regexp.MustCompile("Kubeflow Trainer v(\\d+\\.\\d+\\.\\d+)"), strings.TrimPrefix(trainer.Version, "v")},
		{regexp.MustCompile("JobSet v(\\d+\\.\\d+\\.\\d+)"), strings.TrimPrefix(trainer.JobSetVersion, "v")},
		{regexp.MustCompile("Kueue v(\\d+\\.\\d+\\.\\d+)"), strings.TrimPrefix(kueue.Version, "v")},
		{regexp.MustCompile("NVIDIA DRA driver v(\\d+\\.\\d+\\.\\d+)"), strings.TrimPrefix(dradriver.Version, "v")},
	}
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, p := range pins {
		seen := 0
		for _, doc := range append(docs, "../../README.md") {
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range p.what.FindAllStringSubmatch(string(b), -1) {
				seen++
				if m[1] != p.version {
					t.Errorf("%s says %q; the pin is %s", filepath.Base(doc), m[0], p.version)
				}
			}
		}
		if seen == 0 {
			t.Errorf("no document states %s", p.what)
		}
	}
}

// markdownLink is a Markdown link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocumentLinksResolve: every link from README.md, docs/ and test/README.md to a file of the
// repository names one that exists (the part before any #anchor), so a move leaves no dead link.
func TestDocumentLinksResolve(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md", "../../test/README.md")
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist: fix the link or restore the file", strings.TrimPrefix(doc, "../../"), m[1])
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d links: the documents' links were not read", checked)
	}
}
