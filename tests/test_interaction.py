"""The multi-turn conversation: prompts, code extraction, feedback turns and context selection."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from conftest import RELU_KERNEL
from pydantic import ValidationError

from tritongym.core.errors import ConfigError
from tritongym.core.learn.interaction import (
    CONTEXT_SELECTORS,
    EMPTY_BLOCK,
    NO_BLOCK,
    TEMPLATES_DIR,
    Interaction,
    InteractionOptions,
    Turn,
    extract_code,
    no_code_feedback,
)
from tritongym.core.problems import load_problem, parse_problem

CODE = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass"


@pytest.fixture
def softmax():
    return load_problem("softmax")


def turns(*rewards: float) -> list[Turn]:
    return [
        Turn(response=f"reply {i}", code=f"code {i}", feedback=f"evaluation {i}", reward=r)
        for i, r in enumerate(rewards, 1)
    ]


def contents(messages, role):
    return [m["content"] for m in messages if m["role"] == role]


# --- the first prompt ---------------------------------------------------------------------------------


def test_first_prompt_has_reference_example_and_contract(softmax):
    messages = Interaction().first_messages(softmax)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Triton" in messages[0]["content"]
    task = messages[1]["content"]
    assert softmax.source.strip() in task and "`softmax`" in task and softmax.description in task
    assert "axpy_kernel" in task and "@triton.jit" in task and "def get_init_inputs" in task  # the example
    assert "same arguments as `Model.__init__`" in task and "same outputs" in task  # the contract
    assert "one fenced ```python block containing the whole file" in task
    assert "turn 1 of 3" in task
    assert "$" not in task.replace(softmax.source, "")  # every placeholder was filled


def test_every_bundled_template_is_valid_and_every_option_documented():
    names = ["example.md", "feedback.md", "judge.md", "system.md", "task.md"]
    assert sorted(p.name for p in TEMPLATES_DIR.iterdir()) == names  # judge.md: the llm-judge check's prompt
    from tritongym.plugins.checks.llm_judge import check_template

    check_template((TEMPLATES_DIR / "judge.md").read_text())
    assert all(field.description for field in InteractionOptions.model_fields.values())
    # a context mode is a name in `context` and a selector: the two lists cannot drift apart
    assert set(get_args(InteractionOptions.model_fields["context"].annotation)) == set(CONTEXT_SELECTORS)


def test_the_bundled_example_is_correct_triton(evaluator):
    """The worked example is a real problem and a real answer: its ModelNew passes the evaluation."""
    example = (TEMPLATES_DIR / "example.md").read_text()
    reference, answer = example.split("An answer")
    problem = parse_problem(extract_code(reference).code, "axpy", "example.md")
    result = evaluator.evaluate(extract_code(answer).code, problem)
    assert result.status.value == "ok" and result.correct, result.message
    assert [launch.kernel for launch in result.launches] == ["axpy_kernel"]


# --- code extraction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        pytest.param(f"Here it is:\n```python\n{CODE}\n```\nDone.", CODE, id="one block"),
        pytest.param("```python\nfirst = 1\n```\ntext\n```python\nsecond = 2\n```\n", "second = 2", id="last block"),
        pytest.param("```python\nx = 1\n```\n```bash\npip install triton\n```", "x = 1", id="other tags ignored"),
        pytest.param("```python\nx = 1\n```\n```\nplain = 2\n```", "x = 1", id="tagged beats a later untagged"),
        pytest.param("```\nplain = 2\n```\nthanks", "plain = 2", id="untagged when no tagged block"),
        pytest.param("```python3\nx = 3\n```", "x = 3", id="python3"),
        pytest.param("```py\nx = 4\n```", "x = 4", id="py"),
        pytest.param("``` Python  title=model.py\nx = 5\n```", "x = 5", id="info string"),
        pytest.param("```python\r\nx = 1\r\ny = 2\r\n```\r\n", "x = 1\ny = 2", id="CRLF"),
        pytest.param("```python\n\n\n    x = 1  \n\n```", "    x = 1", id="blank lines and trailing whitespace"),
        pytest.param(f"```python\n{CODE}\n\n   ", CODE, id="unterminated: cut at max_tokens"),
        pytest.param(
            "1. The code:\n   ```python\n   x = 1\n   if x:\n       y = 2\n   ```",
            "x = 1\nif x:\n    y = 2",
            id="indented",
        ),
        pytest.param("````python\nx = '```'\n```\ny = 1\n````", "x = '```'\n```\ny = 1", id="longer fence"),
        pytest.param(
            '```python\ndef f():\n    """Use it as\n    ```python\n    f()\n    ```\n    """\n```',
            'def f():\n    """Use it as\n    ```python\n    f()\n    ```\n    """',
            id="nested fence in a docstring",
        ),
        pytest.param(
            'x = 1\n```python\ndef g():\n    """\n    ```\n    g()\n    ```\n    """\n```',
            'def g():\n    """\n    ```\n    g()\n    ```\n    """',
            id="indented bare fences are content",
        ),
        pytest.param("Use ```python``` blocks. ```python\nx = 1\n```", None, id="inline backticks are no fence"),
    ],
)
def test_extract_code(text, code):
    extraction = extract_code(text)
    assert extraction.code == code
    assert (extraction.reason == "") == (code is not None)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I would use a Triton kernel with BLOCK = 1024.", NO_BLOCK),
        ("", NO_BLOCK),
        (
            "```bash\npip install triton\n```\n```cuda\n__global__ void k() {}\n```",
            f"{NO_BLOCK} (only blocks tagged bash, cuda)",
        ),
        ("```markdown\nSee:\n```python\nx = 1\n```\n```", f"{NO_BLOCK} (only blocks tagged markdown)"),
        ("```python\n\n   \n```", EMPTY_BLOCK),
        ("```python\nx = 1\n```\n```python\n```", EMPTY_BLOCK),
        ("```python", EMPTY_BLOCK),
    ],
)
def test_no_code(text, reason):
    extraction = extract_code(text)
    assert extraction.code is None and extraction.reason.startswith(reason)


def test_prefill_is_part_of_what_is_extracted_and_shown(softmax):
    interaction = Interaction(InteractionOptions(assistant_prefill="```python\n", max_turns=3))
    assert interaction.extract(f"{CODE}\n```\nThis computes a softmax.").code == CODE
    assert interaction.extract(f"{CODE}\n    out = ").code == f"{CODE}\n    out ="  # cut at max_tokens
    assert interaction.extract("x = 1\n```\nBetter:\n```python\nx = 2\n```").code == "x = 2"
    assert interaction.extract("```\nNo code this time.").code is None
    assert extract_code(f"{CODE}\n```").code is None  # without the prefill there is no opening fence

    history = turns(0.5)
    messages = interaction.next_messages(softmax, history)
    assert contents(messages, "assistant") == ["```python\nreply 1"]
    assert messages[-1]["role"] == "user"  # the engine, not the messages, starts the reply with the prefill
    assert interaction.options.assistant_prefill == "```python\n"


# --- history and context ------------------------------------------------------------------------------


def test_full_context_replays_every_turn_and_extends_the_previous_prompt(softmax):
    interaction = Interaction(InteractionOptions(max_turns=5))
    history = turns(0.0, 1.0, 0.5)
    messages = interaction.next_messages(softmax, history)
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "user"] * 3
    assert messages[:2] == interaction.first_messages(softmax)
    assert contents(messages, "assistant") == ["reply 1", "reply 2", "reply 3"]
    feedback = contents(messages, "user")[1:]
    for i, text in enumerate(feedback, 1):
        assert text.startswith(f"evaluation {i}") and f"turn {i + 1} of 5 ({5 - i} left" in text
    # turn k's prompt is turn k-1's prompt plus that turn's reply and feedback: training rows see what the model saw
    for k in range(len(history)):
        assert interaction.next_messages(softmax, history[: k + 1])[:-2] == interaction.next_messages(
            softmax, history[:k]
        )


def test_top_w_context_keeps_the_best_turns_in_turn_order(softmax):
    interaction = Interaction(InteractionOptions(context="top-w", top_w=3, max_turns=8))
    history = turns(0.5, 1.0, 0.0, 1.0, 0.5, 0.2)  # turns 1..6; now writing turn 7
    messages = interaction.next_messages(softmax, history)
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "user"] * 3
    # best: turns 2 and 4 (1.0), then turn 5 over turn 1 (0.5 each: the later turn wins the tie)
    assert contents(messages, "assistant") == ["reply 2", "reply 4", "reply 5"]
    feedback = contents(messages, "user")[1:]
    assert [text.split("\n")[0] for text in feedback] == ["evaluation 2", "evaluation 4", "evaluation 5"]
    # each feedback message is the prompt of the turn shown next; the last one states the turn asked for now
    assert "turn 4 of 8" in feedback[0] and "turn 5 of 8" in feedback[1]
    assert "turn 7 of 8 (2 left" in feedback[2]


@pytest.mark.parametrize("context", ["top-w", "best-window"])
def test_a_window_over_few_turns_is_the_full_history(softmax, context):
    history = turns(0.3, 0.1)
    window = Interaction(InteractionOptions(context=context, top_w=4, max_turns=4))
    full = Interaction(InteractionOptions(max_turns=4))
    assert window.next_messages(softmax, history) == full.next_messages(softmax, history)
    assert window.next_messages(softmax, []) == window.first_messages(softmax)


def test_top_w_ties_prefer_the_later_turn(softmax):
    interaction = Interaction(InteractionOptions(context="top-w", top_w=2, max_turns=6))
    messages = interaction.next_messages(softmax, turns(0.0, 0.0, 0.0, 0.0))
    assert contents(messages, "assistant") == ["reply 3", "reply 4"]
    messages = interaction.next_messages(softmax, turns(-1.0, 0.0, -1.0, -1.0))  # a hack penalty ranks last
    assert contents(messages, "assistant") == ["reply 2", "reply 4"]


def test_best_window_shows_the_consecutive_turns_with_the_highest_total(softmax):
    interaction = Interaction(InteractionOptions(context="best-window", top_w=2, max_turns=8))
    history = turns(1.0, 0.0, 0.0, 0.6, 0.6, 0.0)  # window sums 1.0, 0.0, 0.6, 1.2, 0.6; now writing turn 7
    messages = interaction.next_messages(softmax, history)
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "user"] * 2
    assert messages[:2] == interaction.first_messages(softmax)
    assert contents(messages, "assistant") == ["reply 4", "reply 5"]  # top-w would show turns 1 and 5
    feedback = contents(messages, "user")[1:]
    assert [text.split("\n")[0] for text in feedback] == ["evaluation 4", "evaluation 5"]
    assert "turn 5 of 8" in feedback[0] and "turn 7 of 8 (2 left" in feedback[1]


@pytest.mark.parametrize(
    ("rewards", "w", "shown"),
    [
        pytest.param((), 3, [], id="no history"),
        pytest.param((0.3, 0.1), 4, [0, 1], id="w larger than the history: all of it"),
        pytest.param((0.3, 0.1, 0.9), 3, [0, 1, 2], id="w equal to the history"),
        pytest.param((0.2, 0.9, 0.1, 0.3), 1, [1], id="w = 1 is the single best turn"),
        pytest.param((0.5, 0.5, 0.0, 1.0), 2, [2, 3], id="tie: the later window"),
        pytest.param((1.0, 0.0, 1.0, 0.0, 0.0), 2, [2, 3], id="three-way overlapping tie: the latest window"),
        pytest.param((0.0, 0.0, 0.0, 0.0, 0.0), 3, [2, 3, 4], id="all zero: the last w turns"),
        pytest.param((-1.0, 1.0, -1.0, 0.4, 0.4), 2, [3, 4], id="a hack penalty counts against its window"),
        pytest.param((-1.0, 0.0, -1.0, -1.0), 2, [1, 2], id="negative rewards, tie: the later window"),
        pytest.param((0.9, 0.1, 0.1, 0.1, 0.1, 0.8), 3, [0, 1, 2], id="an early window can win"),
    ],
)
def test_best_window_selector_on_hand_made_histories(rewards, w, shown):
    options = InteractionOptions(context="best-window", top_w=w, max_turns=10)
    assert CONTEXT_SELECTORS["best-window"](turns(*rewards), options) == shown


def test_no_turn_after_the_last(softmax):
    interaction = Interaction(InteractionOptions(max_turns=2))
    interaction.next_messages(softmax, turns(0.0))
    with pytest.raises(ValueError, match="max_turns is 2"):
        interaction.next_messages(softmax, turns(0.0, 1.0))


# --- feedback turns -----------------------------------------------------------------------------------


def test_a_reply_without_code_gets_a_zero_reward_verdict(softmax):
    interaction = Interaction()
    extraction = interaction.extract("Let me think about tiling first.")
    turn = interaction.make_turn("Let me think about tiling first.", extraction, None)
    assert turn.code is None and turn.reward == 0.0
    assert turn.feedback == no_code_feedback(extraction)
    assert NO_BLOCK in turn.feedback and "reward 0" in turn.feedback
    assert "one fenced ```python block containing the whole file that defines `ModelNew`" in turn.feedback
    message = interaction.next_messages(softmax, [turn])[-1]["content"]
    assert message.startswith("Nothing was evaluated") and "turn 2 of 3" in message
    with pytest.raises(ValueError, match="needs the EvaluationResult"):
        interaction.make_turn(CODE, extract_code(f"```python\n{CODE}\n```"), None)


def test_compile_and_import_errors_come_back_with_their_traceback(evaluator, relu_problem):
    interaction = Interaction()
    bad_import = RELU_KERNEL.replace("import triton\n", "import triton\nimport triton_helpers_that_do_not_exist\n")
    replies = [f"```python\n{bad_import}```", "```python\ndef broken(:\n    pass\n```"]
    extractions = [interaction.extract(reply) for reply in replies]
    results = evaluator.evaluate_many([(e.code, relu_problem) for e in extractions])
    assert [r.status.value for r in results] == ["compile_error", "compile_error"]
    history = [interaction.make_turn(r, e, res) for r, e, res in zip(replies, extractions, results)]
    assert [t.reward for t in history] == [0.0, 0.0]

    message = interaction.render_feedback(results[0], turn=1)
    assert "Traceback:" in message and 'File "candidate.py", line 3' in message
    assert "ModuleNotFoundError: No module named 'triton_helpers_that_do_not_exist'" in message
    assert "turn 2 of 3" in message and "/tmp/" not in message
    assert message == interaction.next_messages(relu_problem, history[:1])[-1]["content"]
    message = interaction.next_messages(relu_problem, history)[-1]["content"]
    assert "Traceback:" in message and "SyntaxError" in message and "def broken(:" in message
    assert "turn 3 of 3 (1 left" in message


# --- templates from config ----------------------------------------------------------------------------


def test_templates_can_be_replaced_by_files_of_ones_own(tmp_path, softmax):
    task = tmp_path / "task.md"
    task.write_text("Port $problem_name ($max_turns tries, $$5 bounty):\n$reference_code\n")
    feedback = tmp_path / "feedback.md"
    feedback.write_text("[$turn/$max_turns] ${feedback}!")
    system = tmp_path / "system.md"
    system.write_text("Be brief.\n")
    example = tmp_path / "example.md"
    example.write_text("no example")
    interaction = Interaction(
        {
            "system_template": str(system),
            "task_template": str(task),
            "feedback_template": str(feedback),
            "example_file": str(example),
            "max_turns": 2,
        }
    )
    messages = interaction.next_messages(softmax, turns(0.25))
    assert messages[0]["content"] == "Be brief."
    assert messages[1]["content"] == f"Port softmax (2 tries, $5 bounty):\n{softmax.source.strip()}"
    assert messages[3]["content"] == "[2/2] evaluation 1!"


@pytest.mark.parametrize(
    ("option", "text", "match"),
    [
        ("task_template", "Port $problem:\n$reference_code", r"unknown placeholder \$problem \(allowed: \$description"),
        ("feedback_template", "$feedback costs $5", r"line 1: a '\$' that starts no placeholder; write '\$\$'"),
        ("feedback_template", "Turn $turn: ${evaluation}", r"unknown placeholder \$evaluation"),
        ("system_template", "Turn $turn of $max_turns.", r"unknown placeholder \$max_turns, \$turn \(allowed: none\)"),
        ("task_template", "Write a kernel for $problem_name.", r"must use \$reference_code"),
        ("feedback_template", "Try again (turn $turn).", r"must use \$feedback"),
    ],
)
def test_a_bad_template_is_a_config_error_naming_file_and_placeholder(tmp_path, option, text, match):
    path = tmp_path / "custom.md"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as info:
        Interaction({option: str(path)})
    assert f"template {path} ({option})" in str(info.value)


def test_a_missing_template_file_fails_when_the_options_are_read(tmp_path):
    missing = tmp_path / "nope" / "task.md"
    with pytest.raises(ConfigError, match=f"interaction option task_template: no such file {missing}"):
        InteractionOptions(task_template=missing)
    with pytest.raises(ConfigError, match="interaction option example_file: no such file"):
        Interaction({"example_file": str(tmp_path)})  # a directory is not a file
    with pytest.raises(ConfigError, match="interaction options: top_w: Input should be greater than or equal to 1"):
        Interaction({"top_w": 0})
    with pytest.raises(ConfigError, match="interaction options: contex: Extra inputs are not permitted"):
        Interaction({"contex": "full"})
    with pytest.raises(ValidationError):
        InteractionOptions(context="best-windows")
    assert InteractionOptions(task_template=Path(TEMPLATES_DIR / "task.md")).path_of("task_template").is_file()
