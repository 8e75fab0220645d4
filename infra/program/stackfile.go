package program

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// EnvStackFile overrides where the program reads the stack file from.
const EnvStackFile = "GPUCLUSTER_STACK_FILE"

// StackFile finds stack's config file as the Pulumi CLI does: the Pulumi.yaml nearest above dir,
// its stackConfigDir, and Pulumi.<stack>.yaml in it: the offline commands' configuration, and
// under pulumi up the file that places errors on lines.
func StackFile(dir, stack string) (string, error) {
	if f := os.Getenv(EnvStackFile); f != "" {
		return f, nil
	}
	project, err := ProjectDir(dir)
	if err != nil {
		return "", err
	}
	p, err := readProject(project)
	if err != nil {
		return "", err
	}
	return filepath.Join(project, p.StackConfigDir, "Pulumi."+stack+".yaml"), nil
}

// ProjectName is the name the project's Pulumi.yaml gives it: what the backend files its stacks under.
func ProjectName(project string) (string, error) {
	p, err := readProject(project)
	if err != nil {
		return "", err
	}
	if p.Name == "" {
		return "", fmt.Errorf("%s names no project", filepath.Join(project, "Pulumi.yaml"))
	}
	return p.Name, nil
}

// projectFile is what gpucluster reads of a Pulumi.yaml.
type projectFile struct {
	Name           string `yaml:"name"`
	StackConfigDir string `yaml:"stackConfigDir"`
}

func readProject(project string) (projectFile, error) {
	var p projectFile
	data, err := os.ReadFile(filepath.Join(project, "Pulumi.yaml"))
	if err != nil {
		return p, err
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("%s: %w", filepath.Join(project, "Pulumi.yaml"), err)
	}
	return p, nil
}

// ProjectDir is the directory of the Pulumi.yaml nearest above dir: the project root.
func ProjectDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		_, err := os.Stat(filepath.Join(d, "Pulumi.yaml"))
		switch {
		case err == nil:
			return d, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		case filepath.Dir(d) == d:
			return "", fmt.Errorf("no Pulumi.yaml in %s or above: run from the gpucluster checkout", dir)
		}
	}
}
