package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// setup is an assembled agent for `run`, with what must be closed after.
type setup struct {
	agent     *agent.Agent
	modelName string
	closers   []func() error
}

func (s *setup) close() {
	for _, c := range s.closers {
		_ = c()
	}
}

// assemble reads the configuration (flags > project deepagents.toml > user
// ~/.deepagents/config.toml), builds the model, the filesystem and the
// subagents declared in agent files, and the deep agent.
func assemble(ctx context.Context, f runFlags, stderr io.Writer) (*setup, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(cwd, home)
	if err != nil {
		return nil, err
	}
	s := &setup{}

	modelStr := cfg.Model
	if f.model != "" {
		if modelStr, err = cfg.ExpandModel(f.model); err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
	}
	var spec providers.Spec
	if modelStr == "" {
		if spec, err = providers.Detect(); err != nil {
			return nil, err
		}
	} else if spec, err = providers.Parse(modelStr); err != nil {
		return nil, err
	}
	model, err := buildModel(ctx, cfg, spec)
	if err != nil {
		return nil, err
	}
	s.modelName = spec.String()

	system := cfg.SystemPrompt
	if f.set["system"] {
		system = f.system
		if path, ok := strings.CutPrefix(f.system, "@"); ok {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("--system: %w", err)
			}
			system = string(data)
		}
	}
	maxSteps, maxParallel := cfg.MaxSteps, cfg.MaxParallel
	if f.set["max-steps"] {
		maxSteps = f.maxSteps
	}
	if f.set["max-parallel"] {
		maxParallel = f.maxParallel
	}
	if maxSteps < 0 || maxParallel < 0 {
		return nil, fmt.Errorf("--max-steps and --max-parallel must not be negative")
	}

	var backend vfs.Backend
	if f.root != "" {
		root, err := osfs.New(f.root)
		if err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
		s.closers = append(s.closers, root.Close)
		backend = root
	}

	dirs := config.AgentDirs(cwd, home)
	if f.subagents != "" {
		st, err := os.Stat(f.subagents)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--subagents %s: not a directory", f.subagents)
		}
		dirs = append(dirs, f.subagents)
	}
	files, err := config.LoadAgents(dirs...)
	if err != nil {
		return nil, err
	}
	var specs []subagent.Spec
	for _, af := range files {
		sp, err := agentSpec(ctx, cfg, af)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}

	a, err := deepagents.New(deepagents.Config{
		Model: model, SystemPrompt: system, Subagents: specs, Backend: backend,
		MaxSteps: maxSteps, MaxParallel: maxParallel, Stream: true,
	})
	if err != nil {
		return nil, err
	}
	s.agent = a
	return s, nil
}

// buildModel builds spec's model with the provider's configured options.
func buildModel(ctx context.Context, cfg *config.Config, spec providers.Spec) (llm.Model, error) {
	pc := cfg.ProviderFor(spec.Provider)
	opts := providers.Options{
		Kind: providers.Kind(pc.Type), BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv, Headers: pc.Headers,
		NoStreamToolCalls:   pc.StreamToolCalls != nil && !*pc.StreamToolCalls,
		NoParallelToolCalls: pc.ParallelToolCalls != nil && !*pc.ParallelToolCalls,
	}
	if err := providers.Check(spec, opts); err != nil {
		return nil, err
	}
	return providers.New(ctx, spec, opts)
}

// agentSpec turns an agent file into a subagent spec: its tools are looked
// up by name among the built-in file tools, and its model is built.
func agentSpec(ctx context.Context, cfg *config.Config, af config.AgentFile) (subagent.Spec, error) {
	sp := af.Spec()
	if af.Tools != nil {
		builtin := fstools.Tools()
		sp.Tools = []tool.Tool{}
		sp.ExactTools = true
		for _, name := range af.Tools {
			i := slices.IndexFunc(builtin, func(t tool.Tool) bool { return t.Spec().Name == name })
			if i < 0 {
				return sp, fmt.Errorf("%s: unknown tool %q; the tools available to subagents are %s", af.Path, name, strings.Join(fstools.Names, ", "))
			}
			sp.Tools = append(sp.Tools, builtin[i])
		}
	}
	if af.Model != "" {
		ref, err := cfg.ExpandModel(af.Model)
		if err != nil {
			return sp, fmt.Errorf("%s: %w", af.Path, err)
		}
		spec, err := providers.Parse(ref)
		if err != nil {
			return sp, fmt.Errorf("%s: %w", af.Path, err)
		}
		m, err := buildModel(ctx, cfg, spec)
		if err != nil {
			return sp, fmt.Errorf("%s: model %s: %w", af.Path, af.Model, err)
		}
		sp.Model = m
	}
	return sp, nil
}
