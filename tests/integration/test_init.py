"""`ralphctl init`: each template writes its starter files (creating directories), a second init
refuses and writes nothing, --force overwrites, an unknown template is a usage error naming the
known ones, --print-template prints the prompt wrapper, --force writes through no symbolic link. And end to end: the files init writes are
what the agent of a loop in that workspace gets in its prompt."""

import os

from harness import (DaemonTestCase, TERMINAL_STATES, agent_command, commit_all, main, read_text,
                     write_text)

TEMPLATES = {
    "default": ["PROMPT.md", "SPECS.md", "CONVENTIONS.md", ".ralph/notes.md"],
    "plan": ["PROMPT.md", "plan.md", "progress.md"],
    "backlog": [".ralph/prompt.md", "backlog.md", "notepad.md"],
}


def all_files(directory):
    found = []
    for root, _, files in os.walk(directory):
        for name in files:
            found.append(os.path.relpath(os.path.join(root, name), directory))
    return sorted(found)


class InitTest(DaemonTestCase):

    def setUp(self):
        # init does not talk to the daemon: temporary directories only, nothing listening.
        self.d = self.new_daemon_unstarted()

    def test_each_template_writes_its_files_and_says_how_to_start_a_loop(self):
        for name, files in TEMPLATES.items():
            with self.subTest(template=name):
                target = os.path.join(self.d.work_dir, "new", name)  # does not exist yet
                proc = self.d.ctl("init", "--template", name, target)
                self.assertEqual(all_files(target), sorted(files))
                for path in files:
                    self.assertIn(path, proc.stdout)
                    self.assertTrue(read_text(os.path.join(target, path)).startswith("# "), path)
                self.assertIn("ralphctl submit --workspace %s" % target, proc.stdout)
                self.assertEqual(name == "backlog", "--backlog" in proc.stdout, proc.stdout)
                self.assertEqual(proc.stderr, "")

        self.assertIn("- [ ]",
                      read_text(os.path.join(self.d.work_dir, "new", "default", "SPECS.md")))
        plan_prompt = read_text(os.path.join(self.d.work_dir, "new", "plan", "PROMPT.md"))
        for words in ("plan.md", "FIRST unchecked item", "progress.md"):
            self.assertIn(words, plan_prompt)
        backlog_prompt = read_text(os.path.join(self.d.work_dir, "new", "backlog", ".ralph",
                                                "prompt.md"))
        self.assertIn("every box in backlog.md is checked", backlog_prompt)
        self.assertIn("notepad.md", backlog_prompt)

    def test_without_dir_it_writes_in_the_current_directory(self):
        proc = self.d.ctl("init")  # ralphctl runs in d.work_dir
        self.assertEqual(all_files(self.d.work_dir), sorted(TEMPLATES["default"]), proc.stdout)

    def test_json_names_the_template_and_the_files(self):
        target = os.path.join(self.d.work_dir, "ws")
        out = self.d.ctl_json("init", "--template", "plan", target)
        self.assertEqual(out["template"], "plan")
        self.assertEqual(out["files"], TEMPLATES["plan"])
        self.assertEqual(out["directory"], target)

    def test_a_second_init_refuses_names_every_existing_file_and_writes_nothing(self):
        target = os.path.join(self.d.work_dir, "ws")
        self.d.ctl("init", target)
        write_text(os.path.join(target, "SPECS.md"), "my own specs\n")
        os.remove(os.path.join(target, "CONVENTIONS.md"))

        proc = self.d.ctl("init", target, check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertEqual(proc.stdout, "")
        for path in ("PROMPT.md", "SPECS.md", ".ralph/notes.md"):
            self.assertIn(path, proc.stderr)
        self.assertNotIn("CONVENTIONS.md", proc.stderr)
        self.assertIn("--force", proc.stderr)
        self.assertEqual(read_text(os.path.join(target, "SPECS.md")), "my own specs\n")
        self.assertFalse(os.path.exists(os.path.join(target, "CONVENTIONS.md")),
                         "a refused init writes nothing at all, not even the missing files")

        # Another template whose files do not exist yet goes in next to them.
        self.d.ctl("init", "--template", "backlog", target)
        self.assertTrue(os.path.exists(os.path.join(target, "backlog.md")))

    def test_force_overwrites_existing_files(self):
        target = os.path.join(self.d.work_dir, "ws")
        self.d.ctl("init", target)
        original = read_text(os.path.join(target, "SPECS.md"))
        write_text(os.path.join(target, "SPECS.md"), "my own specs\n")
        self.d.ctl("init", "--force", target)
        self.assertEqual(read_text(os.path.join(target, "SPECS.md")), original)

    def test_force_writes_through_no_link_a_cloned_repository_planted(self):
        target = os.path.join(self.d.work_dir, "cloned")
        os.makedirs(os.path.join(target, ".ralph"))
        victim = os.path.join(self.d.work_dir, "bashrc")
        write_text(victim, "the user's own file\n")
        os.symlink(victim, os.path.join(target, "PROMPT.md"))
        proc = self.d.ctl("init", "--force", target, check=False)
        self.assertEqual(proc.returncode, 1, proc)
        self.assertIn("PROMPT.md is a symbolic link", proc.stderr)
        self.assertEqual(read_text(victim), "the user's own file\n")

    def test_an_unknown_template_is_a_usage_error_naming_the_known_ones(self):
        target = os.path.join(self.d.work_dir, "ws")
        proc = self.d.ctl("init", "--template", "kanban", target, check=False)
        self.assertEqual(proc.returncode, 2, proc)
        self.assertIn("kanban", proc.stderr)
        for name in TEMPLATES:
            self.assertIn(name, proc.stderr)
        self.assertFalse(os.path.exists(target))

    def test_print_template_prints_the_wrapper_and_writes_nothing(self):
        proc = self.d.ctl("init", "--print-template")
        for placeholder in ("{{prompt}}", "{{iteration}}", "{{completion_signal}}",
                            "{{#specs}}", "{{notes}}", "{{feedback}}", "{{steering}}"):
            self.assertIn(placeholder, proc.stdout)
        self.assertIn("<ralph-feedback>", proc.stdout)
        self.assertEqual(all_files(self.d.work_dir), [])


class InitEndToEndTest(DaemonTestCase):

    def run_one_iteration(self, d, ws, **params):
        """One iteration of print-args.sh (it saves its stdin, the prompt, in .stdin)."""
        loop = d.submit(ws, agent_command("print-args.sh"), prompt="", max_iterations=1,
                        **params)
        d.wait_state(loop["id"], TERMINAL_STATES, timeout=30)
        return read_text(os.path.join(ws, ".stdin"))

    def test_the_agent_gets_prompt_md_specs_conventions_and_notes_written_by_init(self):
        d = self.daemon()
        ws = d.workspace()
        d.ctl("init", ws)
        commit_all(ws, "ralphctl init")
        prompt = self.run_one_iteration(d, ws)
        self.assertTrue(prompt.startswith(read_text(os.path.join(ws, "PROMPT.md")).rstrip()),
                        prompt)
        for path in ("SPECS.md", "CONVENTIONS.md", ".ralph/notes.md"):
            self.assertIn('<file path="%s">\n%s\n</file>'
                          % (path, read_text(os.path.join(ws, path)).rstrip()), prompt)
        self.assertIn("This is iteration 1 of at most 1.", prompt)
        self.assertIn("<promise>COMPLETE</promise>", prompt)

    def test_the_backlog_template_prompt_comes_from_dot_ralph_prompt_md(self):
        d = self.daemon()
        ws = d.workspace()
        d.ctl("init", "--template", "backlog", ws)
        commit_all(ws, "ralphctl init")
        prompt = self.run_one_iteration(d, ws, backlog_rule=True)
        self.assertTrue(
            prompt.startswith(read_text(os.path.join(ws, ".ralph", "prompt.md")).rstrip()), prompt)
        self.assertIn('<file path="backlog.md">', prompt)
        self.assertIn("every checkbox in backlog.md is checked", prompt)


if __name__ == "__main__":
    main()
