//! Log tails shaped like what the trainers write to a file (hand-written: no capture of these
//! trainers exists in shared/fixtures yet). tqdm redraws with `\r`, nested bars move the cursor
//! with `ESC[A`, Rich colours every span, Keras erases with backspaces.

/// HF Trainer: header, dict log lines, the training bar refreshed with `\r`, and the tail cut
/// while the (nested, description-less) evaluation bar runs.
pub const HF_TRAINER: &str = concat!(
    "[INFO|trainer.py:2078] 2024-05-02 10:11:12,345 >> ***** Running training *****\n",
    "[INFO|trainer.py:2079] 2024-05-02 10:11:12,345 >>   Num examples = 12,000\n",
    "[INFO|trainer.py:2080] 2024-05-02 10:11:12,345 >>   Num Epochs = 3\n",
    "[INFO|trainer.py:2081] 2024-05-02 10:11:12,345 >>   Instantaneous batch size per device = 8\n",
    "[INFO|trainer.py:2087] 2024-05-02 10:11:12,346 >>   Total optimization steps = 4,500\n",
    "\r  0%|          | 0/4500 [00:00<?, ?it/s]",
    "\r  0%|          | 1/4500 [00:01<1:15:00,  1.00s/it]",
    "\r 10%|█         | 450/4500 [01:23<12:30,  5.40it/s]\n",
    "{'loss': 0.6931, 'grad_norm': 1.2345, 'learning_rate': 4.9e-05, 'epoch': 0.07}\n",
    "\r 50%|█████     | 2250/4500 [06:57<06:57,  5.39it/s]",
    "\r 51%|█████     | 2295/4500 [07:05<06:48,  5.40it/s]\n",
    "{'loss': 0.41, 'learning_rate': 4e-05, 'epoch': 1.53}\n",
    "\r 51%|█████     | 2295/4500 [07:05<06:48,  5.40it/s]\n",
    "\r  0%|          | 0/63 [00:00<?, ?it/s]\u{1b}[A\n",
    "\r 48%|████▊     | 30/63 [00:02<00:02, 14.10it/s]\u{1b}[A",
);

/// PyTorch Lightning with its tqdm bar: sanity check, epochs, a validation bar at the end.
pub const LIGHTNING_TQDM: &str = concat!(
    "GPU available: True (cuda), used: True\n",
    "TPU available: False, using: 0 TPU cores\n",
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n",
    "\n",
    "  | Name  | Type   | Params\n",
    "---------------------------------\n",
    "0 | model | ResNet | 11.2 M\n",
    "---------------------------------\n",
    "Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00,  9.12it/s]\n",
    "\rEpoch 2: 100%|██████████| 1000/1000 [03:05<00:00, 5.40it/s, v_num=1, train_loss=0.350]",
    "\n\rValidation DataLoader 0: 100%|██████████| 100/100 [00:07<00:00, 13.5it/s]\u{1b}[A",
    "\rEpoch 3:   0%|          | 0/1000 [00:00<?, ?it/s, v_num=1, train_loss=0.350]",
    "\rEpoch 3:  45%|████▌     | 450/1000 [01:23<01:40, 5.40it/s, v_num=1, train_loss=0.3]",
    "\n\rValidation DataLoader 0:  45%|████▌     | 45/100 [00:03<00:04, 13.1it/s]\u{1b}[A",
);

/// Lightning's RichProgressBar: colour codes around every span, `Epoch 3/49` is 0-based with
/// `max_epochs - 1`, redrawn with `ESC[2K` + `\r`.
pub const LIGHTNING_RICH: &str = concat!(
    "\u{1b}[2K\r\u{1b}[37mEpoch 3/49 \u{1b}[0m \u{1b}[38;2;98;6;224m━━━━━━━━\u{1b}[0m",
    "\u{1b}[38;5;237m╺━━━━━━━━━━\u{1b}[0m \u{1b}[37m400/1000\u{1b}[0m \u{1b}[38;5;245m0:01:14 • 0:01:51\u{1b}[0m",
    "\u{1b}[2K\r\u{1b}[37mEpoch 3/49 \u{1b}[0m \u{1b}[38;2;98;6;224m━━━━━━━━━\u{1b}[0m",
    "\u{1b}[38;5;237m╺━━━━━━━━━\u{1b}[0m \u{1b}[37m450/1000\u{1b}[0m \u{1b}[38;5;245m0:01:23 • 0:01:40\u{1b}[0m ",
    "\u{1b}[38;5;249m5.40it/s\u{1b}[0m \u{1b}[37mv_num: 1 train_loss: 0.300\u{1b}[0m",
);

/// Keras `fit`: `Epoch N/T` then a per-epoch bar erased with backspaces and redrawn.
pub const KERAS: &str = concat!(
    "Epoch 2/50\n",
    "1000/1000 [==============================] - 190s 190ms/step - loss: 0.4012 - val_loss: 0.3990\n",
    "Epoch 3/50\n",
    " 400/1000 [===========>..................] - ETA: 1:53 - loss: 0.3100",
    "\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\r",
    " 450/1000 [============>.................] - ETA: 1:40 - loss: 0.3012",
);

/// A hand-rolled loop printing the PyTorch-tutorial shape: step counts within the epoch.
pub const TUTORIAL_LOOP: &str = concat!(
    "Epoch [3/50], Step [500/600], Loss: 0.3310\n",
    "Epoch [3/50], Step [600/600], Loss: 0.3204\n",
    "Epoch [4/50], Step [100/600], Loss: 0.3188\n",
);

/// A custom loop: `print(f"Epoch {e}/{E}")`, then tqdm over the loader, ANSI-coloured desc.
pub const EPOCH_LINE_THEN_BAR: &str = concat!(
    "\u{1b}[1;32mEpoch 3/50\u{1b}[0m\n",
    "\r  0%|          | 0/1000 [00:00<?, ?it/s]",
    "\r 45%|████▌     | 450/1000 [01:23<01:40,  5.40it/s, loss=0.31]",
);

/// A global step counter, as nanoGPT-style loops print it.
pub const STEP_LINES: &str = concat!(
    "step 1100/50000 | loss 2.3521 | lr 3.0000e-04 | 312.5ms\n",
    "step 1200/50000 | loss 2.3117 | lr 3.0000e-04 | 311.9ms\n",
    "saving checkpoint to out/ckpt.pt\n",
);

/// Torch-lightning-free loggers writing `key=value`.
pub const EPOCH_EQUALS: &str = concat!(
    "2024-05-02 10:11:12 | INFO | epoch=2 train_loss=0.5120 val_loss=0.4980\n",
    "2024-05-02 10:14:40 | INFO | epoch=3 train_loss=0.4410 val_loss=0.4370\n",
);

/// A run that died: no progress anywhere in the tail.
pub const CRASH: &str = concat!(
    "Namespace(config='configs/abl_lr3.yaml', epochs=50, lr=0.001, num_train_epochs=3)\n",
    "Traceback (most recent call last):\n",
    "  File \"/root/proj/train.py\", line 214, in <module>\n",
    "    main()\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total ",
    "capacity of 79.10 GiB of which 1.06 GiB is free. 100% used.\n",
);
