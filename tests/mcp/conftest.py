"""Real MCP servers nobody on this team wrote: `mcp-server-time` and `mcp-server-git` (PyPI,
the `mcp` extra) and `@modelcontextprotocol/server-filesystem` / `server-everything` / `inspector` (npm,
`npm ci --prefix tests/mcp/servers`, which .ci/run does). The npm ones need node: without it
their tests skip, saying so; with node but without the packages installed they fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install -e '.[dev]'")

from jeeves.mcp import MCPServer

SERVERS = Path(__file__).resolve().parent / "servers"
MODULES = SERVERS / "node_modules" / "@modelcontextprotocol"
LOOPBACK = SERVERS / "loopback.mjs"


def node_server(package: str) -> Path:
    """The entry point of an npm MCP server installed under tests/mcp/servers."""
    if shutil.which("node") is None:
        pytest.skip(
            "node is not installed: the npm MCP servers (server-filesystem, server-everything) need it"
        )
    entry = MODULES / package / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing: run `npm ci --prefix tests/mcp/servers` (as .ci/run does)")
    return entry


def time_server(**options: Any) -> MCPServer:
    return MCPServer.stdio(sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC", **options)


def git_server(repo: Path, **options: Any) -> MCPServer:
    return MCPServer.stdio(sys.executable, "-m", "mcp_server_git", "--repository", str(repo), **options)


def filesystem_server(root: Path, **options: Any) -> MCPServer:
    return MCPServer.stdio("node", str(node_server("server-filesystem")), str(root), **options)


def everything_server(**options: Any) -> MCPServer:
    return MCPServer.stdio("node", str(node_server("server-everything")), "stdio", **options)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A throwaway git repository with one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "Tester")
    (root / "README.md").write_text("hello\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "first")
    return root


def faulty_server(**options: Any) -> MCPServer:
    """The deliberately broken server in faulty_server.py (ours: only for fault injection)."""
    script = Path(__file__).resolve().parent / "faulty_server.py"
    return MCPServer.stdio(sys.executable, str(script), name="faulty", **options)
