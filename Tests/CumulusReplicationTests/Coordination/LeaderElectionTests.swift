@testable import CumulusReplication
import Testing

/// The election state machine alone: events in, actions out, no etcd and no clock.
@Suite struct LeaderElectionTests {
    typealias Instant = LeaderElection.Instant
    let t0 = ContinuousClock.now
    let me = LeaderElection.Configuration(
        node: "n1", url: "http://n1:8765", ttl: .seconds(5), safetyMargin: .seconds(1), retryInterval: .milliseconds(250))
    let other = ClusterLeader(node: "n2", url: "http://n2:8765", epoch: 4)

    func at(_ seconds: Double) -> Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// A machine that started at t0 and holds lease 7 granted at t0 (5 s), with its
    /// campaign sent.
    func candidate(knownEpoch: UInt64 = 3) -> LeaderElection {
        var machine = LeaderElection(me, knownEpoch: knownEpoch)
        _ = machine.handle(.started(at: t0))
        _ = machine.handle(.leaseGranted(id: 7, ttl: .seconds(5), requestedAt: t0))
        return machine
    }

    /// A machine leading in epoch 4 since t0 + 0.1 s, at etcd revision 20.
    func leader() -> LeaderElection {
        var machine = candidate()
        _ = machine.handle(.campaignWon(ClusterLeader(node: "n1", url: me.url, epoch: 4), revision: 20, at: at(0.1)))
        return machine
    }

    @Test func startsByAskingForALeaseThenCampaigns() {
        var machine = LeaderElection(me, knownEpoch: 3)
        #expect(machine.handle(.started(at: t0)) == [.grantLease(ttl: .seconds(5))])
        #expect(machine.handle(.started(at: t0)) == [], "a second start does nothing")
        let actions = machine.handle(.leaseGranted(id: 7, ttl: .seconds(5), requestedAt: t0))
        #expect(actions.contains(.campaign(lease: 7, minimumEpoch: 4)), "the next epoch after its own log's")
        #expect(actions.contains(.wake(at: t0 + .seconds(5) / 3)), "a tick when the renewal is due")
        #expect(machine.role == .candidate)
        #expect(!machine.mayAcknowledge(at: t0))
    }

    @Test func winnerAcknowledgesUntilItsLeaseEndLessTheMargin() {
        var machine = candidate()
        let won = ClusterLeader(node: "n1", url: me.url, epoch: 4)
        #expect(machine.handle(.campaignWon(won, revision: 20, at: at(0.1))).contains(.becomeLeader(won)))
        #expect(machine.role == .leader(won))
        // The lease was asked for at t0 for 5 s: etcd holds it until t0 + 5 s at the
        // earliest; the margin of 1 s is given up first.
        #expect(machine.acknowledgeUntil == at(4))
        #expect(machine.mayAcknowledge(at: at(3.999)))
        #expect(!machine.mayAcknowledge(at: at(4)))
    }

    @Test func aRenewalExtendsFromWhenItWasSent() {
        var machine = leader()
        #expect(machine.handle(.tick(at(1.7))) == [.renewLease(id: 7), .wake(at: at(1.7))])
        _ = machine.handle(.leaseRenewed(id: 7, ttl: .seconds(5), requestedAt: at(1.7)))
        #expect(machine.acknowledgeUntil == at(5.7))
        #expect(machine.mayAcknowledge(at: at(5.6)))
        // A renewal of a lease it no longer holds changes nothing.
        _ = machine.handle(.leaseRenewed(id: 99, ttl: .seconds(5), requestedAt: at(3)))
        #expect(machine.acknowledgeUntil == at(5.7))
    }

    @Test func aLeaderThatCannotRenewStopsBeforeEtcdCouldEndItsLease() {
        var machine = leader()
        _ = machine.handle(.tick(at(1.7)))
        _ = machine.handle(.leaseRenewFailed(id: 7, at: at(1.9)))
        // Retried after the interval, failing again.
        #expect(machine.handle(.tick(at(2.15))).contains(.renewLease(id: 7)))
        _ = machine.handle(.leaseRenewFailed(id: 7, at: at(2.5)))
        #expect(machine.mayAcknowledge(at: at(3.9)))
        let actions = machine.handle(.tick(at(4)))
        #expect(actions.contains(.stopLeading(reason: "the lease could not be renewed in time")))
        #expect(actions.contains(.revokeLease(id: 7)))
        #expect(actions.contains(.grantLease(ttl: .seconds(5))), "a new session to campaign with later")
        #expect(machine.role == .candidate)
        #expect(!machine.mayAcknowledge(at: at(4)))
        #expect(machine.acknowledgeUntil == nil)
    }

    @Test func aLostCampaignFollowsTheWinner() {
        var machine = candidate()
        let actions = machine.handle(.campaignLost(other, heldBy: 55, revision: 12, at: at(0.1)))
        #expect(actions == [.follow(other)])
        #expect(machine.role == .follower(other))
        #expect(machine.knownEpoch == 4)
        // The same key seen again by the watch changes nothing.
        #expect(machine.handle(.leaderObserved(other, heldBy: 55, revision: 12, at: at(0.2))) == [])
    }

    @Test func aFollowerCampaignsWhenTheLeaderKeyGoes() {
        var machine = candidate()
        _ = machine.handle(.campaignLost(other, heldBy: 55, revision: 12, at: at(0.1)))
        let actions = machine.handle(.leaderObserved(nil, heldBy: 0, revision: 30, at: at(1)))
        #expect(actions.contains(.campaign(lease: 7, minimumEpoch: 5)), "after the epoch it saw")
        #expect(machine.role == .candidate)
    }

    @Test func aLateWatchEventDoesNotUnseatTheWinner() {
        var machine = leader()  // won at revision 20
        // The deletion of the previous leader's key (revision 19) arrives after the win.
        #expect(machine.handle(.leaderObserved(nil, heldBy: 0, revision: 19, at: at(0.2))) == [])
        #expect(machine.mayAcknowledge(at: at(0.2)))
        // Its own key, as the watch reports it, neither.
        let mine = ClusterLeader(node: "n1", url: me.url, epoch: 4)
        #expect(machine.handle(.leaderObserved(mine, heldBy: 7, revision: 20, at: at(0.3))) == [])
        #expect(machine.mayAcknowledge(at: at(0.3)))
    }

    @Test func anotherLeaderInEtcdFencesThisOne() {
        var machine = leader()
        let newer = ClusterLeader(node: "n2", url: "http://n2:8765", epoch: 5)
        let actions = machine.handle(.leaderObserved(newer, heldBy: 56, revision: 40, at: at(1)))
        #expect(actions.first == .stopLeading(reason: "n2 (http://n2:8765), epoch 5 leads now"))
        #expect(actions.contains(.follow(newer)))
        #expect(!machine.mayAcknowledge(at: at(1)))
        #expect(machine.knownEpoch == 5)
    }

    @Test func itsOwnKeyGoneStopsItAndItCampaignsAgain() {
        var machine = leader()
        let actions = machine.handle(.leaderObserved(nil, heldBy: 0, revision: 25, at: at(1)))
        #expect(actions.first == .stopLeading(reason: "the leader key is gone"))
        #expect(actions.contains(.campaign(lease: 7, minimumEpoch: 5)), "a new epoch, never the same one again")
    }

    @Test func theEpochOnlyMovesForward() {
        var machine = candidate(knownEpoch: 9)
        _ = machine.handle(.campaignLost(ClusterLeader(node: "n2", url: "u", epoch: 2), heldBy: 5, revision: 3, at: at(0.1)))
        #expect(machine.knownEpoch == 9, "an older leader key does not lower it")
        let actions = machine.handle(.leaderObserved(nil, heldBy: 0, revision: 4, at: at(0.2)))
        #expect(actions.contains(.campaign(lease: 7, minimumEpoch: 10)))
    }

    @Test func aWinTooCloseToTheLeaseEndIsGivenUp() {
        var machine = candidate()
        let won = ClusterLeader(node: "n1", url: me.url, epoch: 4)
        let actions = machine.handle(.campaignWon(won, revision: 20, at: at(4.5)))
        #expect(!actions.contains(.becomeLeader(won)))
        #expect(actions.contains(.revokeLease(id: 7)), "its key goes with the lease")
        #expect(actions.contains(.grantLease(ttl: .seconds(5))))
        #expect(machine.role == .candidate)
        #expect(!machine.mayAcknowledge(at: at(4.5)))
    }

    @Test func aKeyNamingItUnderAnotherLeaseIsLeftToExpire() {
        // After a restart: the key from its last life, bound to a lease nobody renews.
        var machine = candidate()
        let old = ClusterLeader(node: "n1", url: me.url, epoch: 3)
        let actions = machine.handle(.campaignLost(old, heldBy: 3, revision: 9, at: at(0.1)))
        #expect(!actions.contains { if case .campaign = $0 { true } else { false } })
        #expect(!actions.contains(.revokeLease(id: 7)), "its own new lease is not the key's")
        #expect(machine.role == .candidate)
        // Until the old lease ends and the key with it.
        #expect(machine.handle(.leaderObserved(nil, heldBy: 0, revision: 11, at: at(3))).contains(.campaign(lease: 7, minimumEpoch: 4)))
    }

    @Test func aKeyNamingItUnderItsOwnLeaseIsDeletedAndWonAgain() {
        var machine = candidate()
        let mine = ClusterLeader(node: "n1", url: me.url, epoch: 4)
        let actions = machine.handle(.campaignLost(mine, heldBy: 7, revision: 9, at: at(0.1)))
        #expect(actions.contains(.revokeLease(id: 7)))
        #expect(actions.contains(.grantLease(ttl: .seconds(5))))
    }

    @Test func aLostLeaseEndsLeadershipAndAsksForAnother() {
        var machine = leader()
        let actions = machine.handle(.leaseLost(id: 7, at: at(2)))
        #expect(actions.contains(.stopLeading(reason: "etcd no longer holds this node's lease")))
        #expect(actions.contains(.grantLease(ttl: .seconds(5))))
        #expect(machine.lease == nil)
        #expect(!machine.mayAcknowledge(at: at(2)))
    }

    @Test func failedRequestsAreRetriedAfterTheInterval() {
        var machine = LeaderElection(me, knownEpoch: 0)
        _ = machine.handle(.started(at: t0))
        #expect(machine.handle(.leaseGrantFailed(at: at(0.1))) == [.wake(at: at(0.35))])
        #expect(!machine.handle(.tick(at(0.2))).contains(.grantLease(ttl: .seconds(5))), "not before the interval")
        #expect(machine.handle(.tick(at(0.35))).contains(.grantLease(ttl: .seconds(5))))
        _ = machine.handle(.leaseGranted(id: 8, ttl: .seconds(5), requestedAt: at(0.4)))
        _ = machine.handle(.campaignFailed(at: at(0.5)))
        #expect(!machine.handle(.tick(at(0.6))).contains(.campaign(lease: 8, minimumEpoch: 1)))
        #expect(machine.handle(.tick(at(0.75))).contains(.campaign(lease: 8, minimumEpoch: 1)))
    }

    @Test func aFollowersExpiredLeaseIsReplaced() {
        var machine = candidate()
        _ = machine.handle(.campaignLost(other, heldBy: 55, revision: 12, at: at(0.1)))
        _ = machine.handle(.tick(at(1.7)))
        _ = machine.handle(.leaseRenewFailed(id: 7, at: at(2)))
        let actions = machine.handle(.tick(at(5)))
        #expect(actions.contains(.grantLease(ttl: .seconds(5))))
        #expect(machine.role == .follower(other), "a follower keeps following meanwhile")
    }
}
