"""The datasets the benches read where they are (never copied): LoCoMo (`locomo`), BEAM (`beam`), a
deterministic synthetic corpus and LoCoMo's text as turns (`corpus`), and near-duplicate corpora
(`near_duplicates`)."""
