#!/bin/sh
# A stand-in training loop for the demo: each rank prints its place in the gang and a
# loss per step. The real data-parallel example (examples/train_mlp) replaces it.
steps=${1:-5}
i=1
while [ "$i" -le "$steps" ]; do
  echo "rank $RANK/$WORLD_SIZE on $BATON_NODE (local $LOCAL_RANK, GPUs ${CUDA_VISIBLE_DEVICES:-none}) step $i loss $(awk "BEGIN{printf \"%.3f\", 2.0/($i+$RANK*0.1)}")"
  sleep 0.2
  i=$((i + 1))
done
