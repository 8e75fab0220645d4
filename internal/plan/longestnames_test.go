package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/fakecloud"
)

// TestEveryStackPlansAtItsLongestClusterName: every stack plans with the longest cluster name the
// validator accepts, one that holds the made-up account's digits (a name is any [a-z0-9-]), and
// its inline policies still show a placeholder for each ARN AWS gives at deploy.
func TestEveryStackPlansAtItsLongestClusterName(t *testing.T) {
	name := "c-" + fakecloud.Account + "-"
	name += strings.Repeat("x", topology.MaxClusterNameLength-len(name))
	files, err := filepath.Glob(stack("*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stack files: %v", err)
	}
	for _, file := range files {
		t.Run(topology.StackName(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text, n := string(b), 0
			text = strings.Replace(text, "config:\n", "config:\n  "+topology.KeyClusterName+": "+name+"\n", 1)
			if n = strings.Count(text, topology.KeyClusterName+":"); n != 1 {
				t.Fatalf("%s names the cluster %d times", file, n)
			}
			copyFile := filepath.Join(t.TempDir(), filepath.Base(file))
			if err := os.WriteFile(copyFile, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Write(copyFile, filepath.Join(t.TempDir(), "review"), testDay, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors() != 0 {
				t.Errorf("%d error findings at cluster name %s", r.Errors(), name)
			}
		})
	}
}

// TestMadeUpAccount: the check finds an ARN in the made-up account, or the account alone, and no
// name that merely holds its digits.
func TestMadeUpAccount(t *testing.T) {
	for text, want := range map[string]bool{
		`"arn:aws:iam::` + fakecloud.Account + `:role/x"`:                      true,
		`"arn:aws:sqs:mock:` + fakecloud.Account + `:q"`:                       true,
		`{"aws:SourceAccount":"` + fakecloud.Account + `"}`:                    true,
		`"c-` + fakecloud.Account + `-x"`:                                      false,
		`"aws:ResourceTag/kubernetes.io/cluster/c-` + fakecloud.Account + `x"`: false,
		placeholderMark(3) + ":*":                                              false,
	} {
		if got := madeUpAccount.MatchString(text); got != want {
			t.Errorf("%q: made-up account %v, want %v", text, got, want)
		}
	}
}
