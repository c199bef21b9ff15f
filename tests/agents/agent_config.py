"""The fake agents' configuration (used by replay-agent.py): each fake CLI reads its own config
files and environment as the real one does, and fails as the real one does when they ask for a
variable it did not get. Standard library only (tomllib: Python 3.11).

configured_failure(agent, argv) -> None when the configuration is satisfied, else
(scenario, {placeholder: replacement}) to replay instead of the loop's script:
- codex: $CODEX_HOME/config.toml (else ~/.codex/config.toml); the model provider chosen by
  `model_provider` (or the `profile`'s) with an `env_key` that is unset or blank fails with
  codex's own "Missing environment variable: `NAME`." (its EnvVarError).
- gemini: with GOOGLE_GEMINI_BASE_URL it calls that endpoint (a POST of generateContent with its
  x-goog-api-key), and fails with "fetch failed" when it cannot; without it it calls Google's
  servers, which a test says are out of reach with FAKE_NO_INTERNET=1 ("fetch failed" too).
- opencode: every {env:NAME} of its config files (~/.config/opencode/{config,opencode}.json(c),
  $OPENCODE_CONFIG, opencode.json(c) from the current directory up to the repository's top) is
  substituted, "" when unset; an empty one is an API key the provider refuses (401).
- claude: ~/.claude/settings.json's (or $CLAUDE_CONFIG_DIR's) apiKeyHelper is run in /bin/sh with
  claude's environment; when it fails or prints nothing, claude says so on stderr and the API
  refuses the missing key ("Invalid API key · Please run /login").
- aider: loads the .env files (~/.env, the repository's top, the current directory), then the
  model (--model, else $AIDER_MODEL, else `model:` of .aider.conf.yml in the home, the
  repository's top, the current directory); an azure/ model needs AZURE_API_KEY, AZURE_API_BASE
  and AZURE_API_VERSION, else aider's "Missing these environment variables" warning.
"""
import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.request

HOME = os.path.expanduser("~")


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def project_dirs():
    """The current directory and those above it up to the repository's top, outermost first."""
    dirs = []
    here = os.getcwd()
    while True:
        dirs.append(here)
        if os.path.exists(os.path.join(here, ".git")) or os.path.dirname(here) == here:
            break
        here = os.path.dirname(here)
    return list(reversed(dirs))


def unset(name):
    return not os.environ.get(name, "").strip()


def codex():
    home = os.environ.get("CODEX_HOME") or os.path.join(HOME, ".codex")
    text = read(os.path.join(home, "config.toml"))
    if text is None:
        return None
    config = tomllib.loads(text)
    provider_id = config.get("model_provider")
    profile = config.get("profiles", {}).get(config.get("profile", ""), {})
    provider_id = profile.get("model_provider", provider_id)
    provider = config.get("model_providers", {}).get(provider_id or "openai", {})
    env_key = provider.get("env_key")
    if env_key and unset(env_key):
        return "missing-env", {b"MISSING_VAR": env_key.encode()}
    return None


def gemini(argv):
    base = os.environ.get("GOOGLE_GEMINI_BASE_URL", "").rstrip("/")
    if not base:
        return ("refused", {}) if os.environ.get("FAKE_NO_INTERNET") else None
    model = argv[argv.index("-m") + 1] if "-m" in argv else "gemini-2.5-pro"
    request = urllib.request.Request(
        "%s/v1beta/models/%s:streamGenerateContent?alt=sse" % (base, model), data=b"{}",
        headers={"x-goog-api-key": os.environ.get("GEMINI_API_KEY", ""),
                 "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local gateway
    try:
        with opener.open(request, timeout=10) as response:
            response.read()
    except OSError:
        return "refused", {}
    return None


def opencode():
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(HOME, ".config")
    files = [os.path.join(config_home, "opencode", name)
             for name in ("config.json", "opencode.json", "opencode.jsonc")]
    if os.environ.get("OPENCODE_CONFIG"):
        files.append(os.environ["OPENCODE_CONFIG"])
    for directory in project_dirs():
        files += [os.path.join(directory, name) for name in ("opencode.json", "opencode.jsonc")]
    for path in files:
        for name in re.findall(r"\{env:([^}]+)\}", read(path) or ""):
            if unset(name):
                return "unauthorized", {}
    return None


def claude():
    directory = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(HOME, ".claude")
    text = read(os.path.join(directory, "settings.json"))
    helper = json.loads(text).get("apiKeyHelper") if text else None
    if not helper:
        return None
    run = subprocess.run(["/bin/sh", "-c", helper], capture_output=True, text=True)
    if run.returncode != 0 or not run.stdout.strip():
        sys.stderr.write("Error getting API key from apiKeyHelper (in settings or ~/.claude.json): "
                         "%s\n" % (run.stderr.strip() or "apiKeyHelper did not return a valid value"))
        return "auth", {}
    return None


AZURE_VARIABLES = ("AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION")


def aider(argv):
    dirs = [HOME] + project_dirs()[:1] + project_dirs()[-1:]
    for directory in dirs:  # python-dotenv: ${NAME} expanded, the file's values win
        for line in (read(os.path.join(directory, ".env")) or "").splitlines():
            key, sep, value = line.strip().removeprefix("export ").partition("=")
            if sep and key and not key.startswith("#"):
                value = value.strip().strip('"')
                os.environ[key.strip()] = re.sub(r"\$\{(\w+)\}",
                                                 lambda m: os.environ.get(m.group(1), ""), value)
    model = argv[argv.index("--model") + 1] if "--model" in argv else os.environ.get("AIDER_MODEL")
    for directory in dirs if not model else []:
        for line in (read(os.path.join(directory, ".aider.conf.yml")) or "").splitlines():
            if line.startswith("model:"):
                model = line.split(":", 1)[1].split(" #")[0].strip().strip("'\"")
    if not model or not model.startswith("azure/"):
        return None
    missing = [name for name in AZURE_VARIABLES if unset(name)]
    if not missing:
        return None
    return "missing-env", {b"MISSING_MODEL": model.encode(),
                           b"MISSING_VARS": "\n".join("- " + n for n in missing).encode()}


def configured_failure(agent, argv):
    if agent == "codex":
        return codex()
    if agent == "gemini":
        return gemini(argv)
    if agent == "opencode":
        return opencode()
    if agent == "claude":
        return claude()
    if agent == "aider":
        return aider(argv)
    return None
