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
// its stackConfigDir, and Pulumi.<stack>.yaml in it. gpucluster reads the file itself, rather
// than the config Pulumi passes, so that every error can name the file and line.
func StackFile(dir, stack string) (string, error) {
	if f := os.Getenv(EnvStackFile); f != "" {
		return f, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		project := filepath.Join(d, "Pulumi.yaml")
		data, err := os.ReadFile(project)
		if errors.Is(err, os.ErrNotExist) {
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("no Pulumi.yaml in %s or above: run from the gpucluster checkout", dir)
			}
			continue
		}
		if err != nil {
			return "", err
		}
		var p struct {
			StackConfigDir string `yaml:"stackConfigDir"`
		}
		if err := yaml.Unmarshal(data, &p); err != nil {
			return "", fmt.Errorf("%s: %w", project, err)
		}
		return filepath.Join(d, p.StackConfigDir, "Pulumi."+stack+".yaml"), nil
	}
}
