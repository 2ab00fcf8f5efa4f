// tp-to-mpi: the per-chip programs (here the Megatron MLP on 2 chips, a oneshot all-reduce)
// become one function every MPI rank runs: rank c takes chip c's branch, each tp.link is
// its isends (of a copy, to every chip the relay copies the buffer to) and its blocking
// receives, the sends waited on at the branch's end; rank 0 returns the results, the other
// ranks placeholders. xDSL's lower-mpi then takes it to calls into an MPI library.
// RUN: tp-opt %S/Inputs/mlp_oneshot.mlir --tp-to-mpi | filecheck %s
// RUN: tp-opt %S/Inputs/mlp_oneshot.mlir -p tp-to-mpi,lower-mpi | filecheck %s --check-prefix=LOWERED

// CHECK-LABEL: func.func @mlp
// CHECK-NEXT: %rank = "mpi.comm.rank"() : () -> i32
// CHECK-NEXT: %chip0 = arith.constant 0 : i32
// CHECK-NEXT: %on_chip0 = arith.cmpi eq, %rank, %chip0 : i32
// CHECK-NEXT: %out = scf.if %on_chip0 -> (tensor<1x8xf32>) {
// Chip 0's link: its partial to chip 1 under tag 0, chip 1's received under tag 1.
// CHECK: %requests = "mpi.allocate"(%sends) <{dtype = !mpi.request}>
// CHECK-NEXT: %p0_out = bufferization.alloc_tensor() copy(%p0) : tensor<1x8xf32, #tp.chip<0>>
// CHECK-NEXT: %p0_out_buf = bufferization.to_buffer %p0_out : tensor<1x8xf32, #tp.chip<0>> to memref<1x8xf32>
// CHECK-NEXT: %p0_out_ptr, %p0_out_count, %p0_out_type = "mpi.unwrap_memref"(%p0_out_buf)
// CHECK: "mpi.isend"(%p0_out_ptr, %p0_out_count, %p0_out_type, %to1, %tag0, %request0)
// CHECK-NEXT: %p1_in = bufferization.alloc_tensor() : tensor<1x8xf32, #tp.chip<1>>
// CHECK: "mpi.recv"(%p1_in_ptr, %p1_in_count, %p1_in_type, %from1, %tag1)
// CHECK-NEXT: %p1 = bufferization.to_tensor %p1_in_buf restrict writable : memref<1x8xf32> to tensor<1x8xf32, #tp.chip<1>>
// CHECK-NEXT: %sum = tp.allreduce %p0, %p1 algorithm "oneshot"
// CHECK-NEXT: %out_1 = arith.addf %x, %sum : tensor<1x8xf32>
// CHECK-NEXT: %sends_1 = arith.constant 1 : i32
// CHECK-NEXT: "mpi.waitall"(%requests, %sends_1)
// CHECK-NEXT: scf.yield %out_1 : tensor<1x8xf32>
// CHECK-NEXT: } else {
// CHECK: %on_chip1 = arith.cmpi eq, %rank, %chip1 : i32
// CHECK: "mpi.isend"(%p1_out_ptr, %p1_out_count, %p1_out_type, %to0, %tag1_1, %request0_1)
// CHECK: "mpi.recv"(%p0_in_ptr, %p0_in_count, %p0_in_type, %from0, %tag0_1)
// Chip 1 computes the sum too (oneshot) but hands the host nothing: a placeholder.
// CHECK: %out_elsewhere = tensor.empty() : tensor<1x8xf32>
// CHECK-NEXT: scf.yield %out_elsewhere
// A rank past the last chip does nothing.
// CHECK: } else {
// CHECK-NEXT: %out_elsewhere_1 = tensor.empty() : tensor<1x8xf32>
// CHECK-NEXT: scf.yield %out_elsewhere_1
// CHECK: func.return %out : tensor<1x8xf32>
// CHECK-NOT: tp.chip_program
// CHECK-NOT: tp.relay

// LOWERED-LABEL: func.func @mlp
// LOWERED-NOT: "mpi.
// LOWERED-DAG: func.call @MPI_Comm_rank
// LOWERED-DAG: func.call @MPI_Isend
// LOWERED-DAG: func.call @MPI_Recv
// LOWERED-DAG: func.call @MPI_Waitall
