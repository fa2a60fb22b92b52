/* MPI calls the shim makes as themselves while the rank's peers keep polling.
 *
 * These calls wait inside MPI in ways the shim cannot turn into a test and a sleep: RMA
 * synchronization (a passive-target lock, flush or unlock completes only when the target's MPI
 * makes progress, while the target's program may be anywhere, even blocked in a barrier of the
 * shim's), the collectives the shim does not wrap, and the calls that make or free
 * communicators, windows and files, which run collectives of MPI's own inside.  MPI completes
 * them by polling its progress engine, as without the shim, and their messages may need a
 * peer's progress that no doorbell announces.  So while a rank is in one, it says so in its
 * record (``polling``) and rings its peers once; a peer blocked in a wait then sleeps at most
 * briefly between its tests (doorbell.c), making about the progress MPI's own waiting call
 * would have made.  The rank's activity is kept as for every wrapped call (activity.c).
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_record.h"
#include "activity.h"

#define POLLED(NAME, PARAMS, ARGS)                                                          \
    int MPI_##NAME PARAMS {                                                                 \
        TB_ENTER(-1);                                                                       \
        tb_polling_begin();                                                                 \
        int rc = PMPI_##NAME ARGS;                                                          \
        tb_polling_end();                                                                   \
        return rc;                                                                          \
    }

POLLED(Win_lock, (int lock_type, int rank, int assert, MPI_Win win), (lock_type, rank, assert,
       win))
POLLED(Win_unlock, (int rank, MPI_Win win), (rank, win))
POLLED(Win_lock_all, (int assert, MPI_Win win), (assert, win))
POLLED(Win_unlock_all, (MPI_Win win), (win))
POLLED(Win_flush, (int rank, MPI_Win win), (rank, win))
POLLED(Win_flush_all, (MPI_Win win), (win))
POLLED(Win_flush_local, (int rank, MPI_Win win), (rank, win))
POLLED(Win_flush_local_all, (MPI_Win win), (win))
POLLED(Win_fence, (int assert, MPI_Win win), (assert, win))
POLLED(Win_start, (MPI_Group group, int assert, MPI_Win win), (group, assert, win))
POLLED(Win_complete, (MPI_Win win), (win))
POLLED(Win_post, (MPI_Group group, int assert, MPI_Win win), (group, assert, win))
POLLED(Win_wait, (MPI_Win win), (win))
POLLED(Win_create, (void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
       MPI_Win *win), (base, size, disp_unit, info, comm, win))
POLLED(Win_allocate, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
       MPI_Win *win), (size, disp_unit, info, comm, baseptr, win))
POLLED(Win_allocate_shared, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void
       *baseptr, MPI_Win *win), (size, disp_unit, info, comm, baseptr, win))
POLLED(Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win *win), (info, comm, win))
POLLED(Win_free, (MPI_Win *win), (win))
POLLED(Scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
       MPI_Comm comm), (sendbuf, recvbuf, count, datatype, op, comm))
POLLED(Exscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
       MPI_Comm comm), (sendbuf, recvbuf, count, datatype, op, comm))
POLLED(Reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype
       datatype, MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, recvcounts, datatype, op, comm))
POLLED(Reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype
       datatype, MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, recvcount, datatype, op, comm))
POLLED(Alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[], const
       MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
       const MPI_Datatype recvtypes[], MPI_Comm comm), (sendbuf, sendcounts, sdispls, sendtypes,
       recvbuf, recvcounts, rdispls, recvtypes, comm))
POLLED(Neighbor_allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void
       *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm), (sendbuf, sendcount,
       sendtype, recvbuf, recvcount, recvtype, comm))
POLLED(Neighbor_allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void
       *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm
       comm), (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
POLLED(Neighbor_alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void
       *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm), (sendbuf, sendcount,
       sendtype, recvbuf, recvcount, recvtype, comm))
POLLED(Neighbor_alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],
       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
       MPI_Datatype recvtype, MPI_Comm comm), (sendbuf, sendcounts, sdispls, sendtype, recvbuf,
       recvcounts, rdispls, recvtype, comm))
POLLED(Neighbor_alltoallw, (const void *sendbuf, const int sendcounts[], const MPI_Aint
       sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const
       MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm), (sendbuf, sendcounts,
       sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm))
POLLED(Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm), (comm, newcomm))
POLLED(Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm), (comm, info,
       newcomm))
POLLED(Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm), (comm, color, key,
       newcomm))
POLLED(Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm
       *newcomm), (comm, split_type, key, info, newcomm))
POLLED(Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm), (comm, group, newcomm))
POLLED(Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm), (comm,
       group, tag, newcomm))
POLLED(Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int
       remote_leader, int tag, MPI_Comm *newintercomm), (local_comm, local_leader, peer_comm,
       remote_leader, tag, newintercomm))
POLLED(Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newintracomm), (intercomm,
       high, newintracomm))
POLLED(Cart_create, (MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int
       reorder, MPI_Comm *comm_cart), (comm_old, ndims, dims, periods, reorder, comm_cart))
POLLED(Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm), (comm,
       remain_dims, newcomm))
POLLED(Graph_create, (MPI_Comm comm_old, int nnodes, const int indx[], const int edges[], int
       reorder, MPI_Comm *comm_graph), (comm_old, nnodes, indx, edges, reorder, comm_graph))
POLLED(Dist_graph_create, (MPI_Comm comm_old, int n, const int sources[], const int degrees[],
       const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm
       *comm_dist_graph), (comm_old, n, sources, degrees, destinations, weights, info, reorder,
       comm_dist_graph))
POLLED(Dist_graph_create_adjacent, (MPI_Comm comm_old, int indegree, const int sources[], const
       int sourceweights[], int outdegree, const int destinations[], const int destweights[],
       MPI_Info info, int reorder, MPI_Comm *comm_dist_graph), (comm_old, indegree, sources,
       sourceweights, outdegree, destinations, destweights, info, reorder, comm_dist_graph))
POLLED(Comm_create_from_group, (MPI_Group group, const char *stringtag, MPI_Info info,
       MPI_Errhandler errhandler, MPI_Comm *newcomm), (group, stringtag, info, errhandler,
       newcomm))
POLLED(Intercomm_create_from_groups, (MPI_Group local_group, int local_leader, MPI_Group
       remote_group, int remote_leader, const char *stringtag, MPI_Info info, MPI_Errhandler
       errhandler, MPI_Comm *newintercomm), (local_group, local_leader, remote_group,
       remote_leader, stringtag, info, errhandler, newintercomm))
POLLED(Comm_disconnect, (MPI_Comm *comm), (comm))
POLLED(File_open, (MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh),
       (comm, filename, amode, info, fh))
POLLED(File_close, (MPI_File *fh), (fh))
POLLED(File_set_view, (MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
       const char *datarep, MPI_Info info), (fh, disp, etype, filetype, datarep, info))
POLLED(File_sync, (MPI_File fh), (fh))
POLLED(File_set_size, (MPI_File fh, MPI_Offset size), (fh, size))
POLLED(File_preallocate, (MPI_File fh, MPI_Offset size), (fh, size))
POLLED(Finalize, (void), ())

/* The large-count forms, where the build's feature check found them (shim.c, shim.py). */
#if TB_HAVE_LARGE_COUNT
POLLED(Win_create_c, (void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm
       comm, MPI_Win *win), (base, size, disp_unit, info, comm, win))
POLLED(Win_allocate_c, (MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void
       *baseptr, MPI_Win *win), (size, disp_unit, info, comm, baseptr, win))
POLLED(Win_allocate_shared_c, (MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
       void *baseptr, MPI_Win *win), (size, disp_unit, info, comm, baseptr, win))
POLLED(Scan_c, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
       MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, count, datatype, op, comm))
POLLED(Exscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
       MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, count, datatype, op, comm))
POLLED(Reduce_scatter_c, (const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, recvcounts,
       datatype, op, comm))
POLLED(Reduce_scatter_block_c, (const void *sendbuf, void *recvbuf, MPI_Count recvcount,
       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm), (sendbuf, recvbuf, recvcount, datatype,
       op, comm))
POLLED(Alltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint
       sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm), (sendbuf,
       sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm))
POLLED(Neighbor_allgather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm), (sendbuf,
       sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
POLLED(Neighbor_allgatherv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
       void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype
       recvtype, MPI_Comm comm), (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
       recvtype, comm))
POLLED(Neighbor_alltoall_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm), (sendbuf,
       sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
POLLED(Neighbor_alltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint
       sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const
       MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm), (sendbuf, sendcounts, sdispls,
       sendtype, recvbuf, recvcounts, rdispls, recvtype, comm))
POLLED(Neighbor_alltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint
       sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm), (sendbuf,
       sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm))
#endif
