// Package config reads the deepagents CLI's configuration: subagents
// declared as Markdown agent files, and the TOML config files.
//
// # Agent files
//
// A file NAME.md in an agents directory declares one subagent: YAML front
// matter between a first line "---" and a closing "---" line, then the
// subagent's system prompt (see AgentFile for the keys). The standard
// directories are ~/.deepagents/agents and .deepagents/agents in the
// project (AgentDirs); LoadAgents reads them, the project's files replacing
// the user's of the same name.
//
// # Config files
//
// ~/.deepagents/config.toml holds the user's settings and deepagents.toml
// in the project directory the project's; Load merges them, the project's
// values over the user's. Command-line flags come last: the CLI assigns the
// fields of the loaded Config whose flags were given. What no file or flag
// sets keeps the library's built-in default. See Config for the keys and
// example.toml for a commented example.
//
// A project file can only tighten what the user set: its permission rules
// come after the user's, its interrupt_on adds gates without lifting the
// user's, its approval_mode may only be "manual", and it may not hold the
// [protect] table, with which the user
// alone lets some protected places change without approval. The user's own
// rules and gates are kept apart (Config.UserPermissions, UserInterruptOn)
// as the floor the CLI holds every agent file to.
//
// # Trust and limits
//
// A project's config file comes with the repository, so the settings that
// decide where requests and API keys go (see CredentialSetting) are only
// used from it once the user trusts the file: Config.CheckTrust refuses
// them otherwise, and a TrustStore remembers approvals by path and content
// hash, so that an edited file must be trusted again. Every file is read
// only when it is a regular file of at most MaxFileSize bytes.
//
// # Errors
//
// Every problem is a *FileError naming the file and line ("path:line:
// reason"); a loader that finds several returns them all, joined with
// errors.Join, so that they can all be fixed at once. Unknown keys are
// errors, with the closest known key as a hint.
package config
