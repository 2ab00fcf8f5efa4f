"""The shard obligation: chip provenance, what sums over slices cover, the folds the seed
writes, the manifest; tp-verify's certificate rests on these."""
