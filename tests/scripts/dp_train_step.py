"""One trainer step on a fixed, synthetic batch of turns, for the data-parallel invariance test.

Run as `python dp_train_step.py MODEL_DIR OUT.json` (one process) or under
`accelerate launch --multi_gpu --num_processes 2` (torchrun; gloo on a CPU).  Each process takes a contiguous
share of the prompt groups, as `Trainer.my_problems` does.  The main process writes the step's metrics
(OUT.json) and the weight update (OUT.json.update.pt); the test compares the two runs.
"""

import json
import sys

import torch

from tritongym.core.generation import Generation
from tritongym.core.learn.rollouts import TurnRecord
from tritongym.core.learn.run_config import RunConfig
from tritongym.core.learn.run_setup import prepare_run
from tritongym.core.learn.trainer import Trainer
from tritongym.core.models import RewardBreakdown

GROUPS, SAMPLES, TURNS = 4, 2, 2


def synthetic_turns(problems, vocab: int) -> list[TurnRecord]:
    """Every turn of the global batch, with fixed prompts, responses, rewards and rollout log-probs."""
    g = torch.Generator().manual_seed(1234)
    records = []
    for group in range(GROUPS):
        for sample in range(SAMPLES):
            trajectory = group * SAMPLES + sample
            for turn in range(TURNS):
                prompt_len = int(torch.randint(5, 12, (1,), generator=g))
                response_len = int(torch.randint(2, 9, (1,), generator=g))
                prompt = torch.randint(3, vocab, (prompt_len,), generator=g).tolist()
                response = torch.randint(3, vocab, (response_len,), generator=g).tolist()
                logprobs = [0.0] * response_len  # replaced by the model's own below
                reward = float(torch.rand(1, generator=g))
                records.append(
                    TurnRecord(
                        problem=problems[group % len(problems)],
                        group=group,
                        trajectory=trajectory,
                        sample=sample,
                        turn=turn,
                        messages=[],
                        generation=Generation(text="x", prompt_token_ids=prompt, token_ids=response, logprobs=logprobs),
                        code="x",
                        result=None,
                        reward=RewardBreakdown(total=reward),
                        feedback="",
                        status="incorrect",
                    )
                )
    return records


def main(model_dir: str, out: str) -> None:
    config = RunConfig.model_validate(
        {
            "model": {"path": model_dir},
            "rollout": {"problems": ["relu", "softmax"], "samples": SAMPLES, "prompts_per_step": 2},
            "eval": {"backend": "triton-cpu"},
            "learning": {"estimator": "trloo", "filters": {"mrs": {}, "prs": {}}},
            "optim": {"lr": 1e-2, "micro_batch": 3, "grad_clip": None},
        }
    )
    parts = prepare_run(config)
    trainer = Trainer(parts)
    rank, world = trainer.accelerator.process_index, trainer.accelerator.num_processes
    records = synthetic_turns(parts.problems, vocab=trainer.tokenizer.vocab_size)
    # rollout log-probs = the model's own, slightly perturbed (an engine's numerics), so MRS keeps most rows
    g = torch.Generator().manual_seed(99)
    for record, old in zip(records, trainer.old_logprobs(trainer._token_rows(records))):
        noise = 0.002 * torch.randn(len(old), generator=g)
        record.generation.logprobs = (torch.tensor(old) + noise).tolist()
    share = GROUPS // world
    mine = [r for r in records if rank * share <= r.group < (rank + 1) * share]
    model = trainer.accelerator.unwrap_model(trainer.model)
    before = {name: t.detach().clone() for name, t in model.state_dict().items()}
    metrics, _ = trainer.learn(mine, step=0)
    update = {name: (t.detach() - before[name]) for name, t in model.state_dict().items()}
    if trainer.accelerator.is_main_process:
        with open(out, "w") as f:
            json.dump({"world": world, "metrics": metrics}, f)
        torch.save(update, out + ".update.pt")
    parts.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
